/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* libguest against a hub it cannot trust: a corrupt segment or a host that
 * breaks the protocol gives the guest an error, never a crash. And what it
 * owes the host: a heartbeat while it waits, the Goodbye's reason, clear
 * register errors, a Close for every channel. The test plays the host
 * itself, in process, on a real segment. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/clock.h"
#include "guest.h"
#include "proto/channel.h"
#include "proto/doorbell.h"
#include "proto/endpoint.h"
#include "proto/method.h"
#include "proto/msg.h"
#include "proto/postcard.h"
#include "proto/sig.h"
#include "proto/ring.h"
#include "proto/segment.h"
#include "proto/builtin.h"
#include "guestlib/internal.h"
#include "tests/unit/testseg.h"

static char path[64];
static struct hp_segment seg;
static int bell[2];
static uint64_t heartbeat_ns;	/* the next attach()'s heartbeat_interval */
static uint32_t credit_window;	/* the next attach()'s initial_credit, 0: the default */
static int spec_host;		/* the next attach()'s host announces no extension */

/* a wait for the test's own thread to sleep: as long as load may make it */
#define SLEEP_WAIT_MS	30000

static void
name_files(void)
{
	snprintf(path, sizeof(path), "/dev/shm/hub-test-guestlib-%d", (int)getpid());
}

static void
remove_files(void)
{
	unlink(path);
	credit_window = 0;
}

/* A segment with peer 1 Reserved for us, and a guest attached to it with
 * the ticket. */
static struct guest *
attach(void)
{
	struct hp_params p = testseg_params(1, 8, 256, 4);
	char a[96], b[32], c[32];
	const char *why = NULL;
	struct guest *g;
	int rc;

	p.heartbeat_interval = heartbeat_ns;
	if (credit_window != 0)
		p.initial_credit = credit_window;
	ck_assert_int_eq(testseg_create(&seg, path, &p, &why), 0);
	if (spec_host) {
		/* no waiter words: each side wakes the other the spec's way */
		hp_segment_header(&seg)->host_features = 0;
		seg.host_features = 0;
		spec_host = 0;
	}
	ck_assert_int_eq(hp_doorbell_pair(bell), 0);
	hp_store_release_u32(&hp_segment_peer(&seg, 1)->state, HP_PEER_RESERVED);
	snprintf(a, sizeof(a), "--hub-path=%s", path);
	snprintf(b, sizeof(b), "--peer-id=1");
	snprintf(c, sizeof(c), "--doorbell-fd=%d", bell[1]);
	char *argv[] = { "guest", a, b, c, NULL };

	rc = guest_attach(4, argv, &g, &why);
	ck_assert_msg(rc == 0, "attach: %s", why);
	return g;
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

/* -- the host's end, for the tests that talk to the guest ---------------- */

static struct hp_endpoint host;
static struct hp_peer_view hview;

static void
host_init(void)
{
	hp_peer_view_host(&seg, 1, &hview);
	ck_assert_int_eq(hp_endpoint_init_host(&host, &seg, &hview, bell[0],
			 hp_load_acquire_u32(&hview.entry->guest_features), NULL), 0);
}

static void
host_send(uint8_t type, uint32_t id, uint64_t method, const void *payload, size_t len)
{
	ck_assert_int_eq(hp_endpoint_send(&host, type, id, method, payload,
					  (uint32_t)len, 0), 0);
}

/* Answers request id with Err(User(why)), or Ok(()) when why is NULL. */
static void
host_answer(uint32_t id, const char *why)
{
	struct hp_response r = { .result = why ? HP_RESULT_ERR : HP_RESULT_OK,
				 .error = HP_ERR_USER };
	uint8_t val[128], buf[192];
	struct hp_pc_enc e;
	int64_t n;

	hp_pc_enc_init(&e, val, sizeof(val));
	if (why != NULL)
		hp_pc_put_str(&e, why, strlen(why));
	r.value = val;
	r.value_len = e.len;
	ck_assert_int_gt(n = hp_msg_encode_response(buf, sizeof(buf), &r), 0);
	host_send(HP_MSG_RESPONSE, id, 0, buf, (size_t)n);
}

/* The next message from the guest: its type and id, or -1 if none. */
static int
host_next(uint32_t *id)
{
	struct hp_msg_in m;
	const char *rule = NULL;
	int rc = hp_endpoint_recv(&host, &m, &rule);

	if (rc == -EAGAIN)
		return -1;
	ck_assert_msg(rc == 0, "the guest broke %s", rule);
	*id = m.desc.id;
	hp_endpoint_release(&host, &m);
	return m.desc.msg_type;
}

static void
host_expect(int type, uint32_t id)
{
	uint32_t got = 0;
	int t = host_next(&got);

	ck_assert_msg(t == type && got == id, "expected type %d id %u, got type %d id %u",
		      type, id, t, got);
}

static void
noop(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	guest_reply(c, NULL, 0);
}

/* r[shm.spawn.guest-init] r[shm.guest.attach] */
START_TEST(test_attach_and_detach)
{
	struct guest *g = attach();

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
	ck_assert_int_eq(testseg_create(&seg, path, &p, &why), 0);
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

/* Writes a foreign segment (testseg.h) with peer 1 Reserved, entry 1's
 * ring_offset set to ring (0: as laid out), and attaches to it. */
static int
attach_foreign(uint64_t ring, struct guest **g, const char **why)
{
	size_t size;
	uint8_t *img = testseg_foreign(&size);
	const struct hp_header *h = (const struct hp_header *)(const void *)img;
	struct hp_peer_entry *e = (struct hp_peer_entry *)(void *)(img + h->peer_table_offset);
	char a[96], c[32];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600), rc;

	e->state = HP_PEER_RESERVED;
	if (ring != 0)
		e->ring_offset = ring;
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, img, size), (ssize_t)size);
	close(fd);
	free(img);
	snprintf(a, sizeof(a), "--hub-path=%s", path);
	snprintf(c, sizeof(c), "--doorbell-fd=%d", bell[1]);
	char *argv[] = { "guest", a, "--peer-id=1", c, NULL };

	rc = guest_attach(4, argv, g, why);
	return rc;
}

/* Another host's layout (slot_size 4100, regions in another order, no
 * extension table): libguest attaches through the header and its entry,
 * announces no feature the host did not offer, and refuses an entry that
 * points outside the file or over the header, saying so.
 * r[shm.spawn.guest-init] r[shm.segment.peer-table] */
START_TEST(test_foreign_segment)
{
	struct guest *g = NULL;
	const char *why = NULL;
	struct hp_segment s;

	ck_assert_int_eq(hp_doorbell_pair(bell), 0);
	ck_assert_msg(attach_foreign(0, &g, &why) == 0, "attach: %s", why);
	ck_assert_uint_eq(guest_peer_id(g), 1);
	ck_assert_int_eq(hp_segment_attach(&s, path, HP_ATTACH_RDONLY, &why), 0);
	ck_assert_uint_eq(hp_segment_peer(&s, 1)->state, HP_PEER_ATTACHED);
	ck_assert_uint_eq(hp_segment_peer(&s, 1)->epoch, 1);
	ck_assert_uint_eq(hp_segment_peer(&s, 1)->guest_features, 0);
	guest_detach(g);	/* closes bell[1] */
	ck_assert_uint_eq(hp_segment_peer(&s, 1)->state, HP_PEER_GOODBYE);
	hp_segment_close(&s);
	close(bell[0]);

	g = NULL;
	ck_assert_int_eq(hp_doorbell_pair(bell), 0);
	ck_assert_int_eq(attach_foreign(1ull << 40, &g, &why), -EBADMSG);
	ck_assert_ptr_null(g);
	ck_assert_msg(why != NULL && strstr(why, "rings lie outside the file") != NULL, "%s", why);
	ck_assert_int_eq(attach_foreign(64, &g, &why), -EBADMSG);
	ck_assert_msg(why != NULL && strstr(why, "rings overlap the header") != NULL, "%s", why);
	close(bell[0]);
	close(bell[1]);
}
END_TEST

/* A host that sends what the spec forbids: the guest's loop ends with
 * -EPROTO, nothing read out of bounds (ASan). */
START_TEST(test_hostile_host)
{
	static const struct { uint8_t type; uint32_t slot, len; const char *what; } bad[] = {
		{ 10, HP_SLOT_INLINE, 1, "msg_type 10 (9 is hubd's Topic)" },
		{ 1, 100, 100, "slot out of range" },
		{ 1, HP_SLOT_INLINE, 33, "inline over 32" },
		{ 4, HP_SLOT_INLINE, 1, "data on a channel it does not receive" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct guest *g;
		struct hp_peer_view v;
		struct hp_ring tx;
		struct hp_desc d;

		g = attach();
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
	struct guest *g = attach();

	hp_store_release_u32(&hp_segment_peer(&seg, 1)->h2g_head, 12345);
	ck_assert_int_eq(guest_service(g), -EPROTO);
	cleanup(g);
}
END_TEST

/* r[shm.goodbye.host]: the host says goodbye, the loop ends cleanly. */
START_TEST(test_host_goodbye_ends_the_loop)
{
	struct guest *g = attach();

	hp_store_release_u32(&hp_segment_header(&seg)->host_goodbye, 1);
	hp_doorbell_signal(bell[0]);
	ck_assert_int_eq(guest_run(g), 0);
	cleanup(g);
}
END_TEST

static void *
stop_later(void *arg)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	nanosleep(&ts, NULL);	/* most likely once the loop sleeps */
	guest_stop(arg);
	return NULL;
}

/* guest_stop is the one call another thread may make (libguest(3),
 * THREADS): the loop ends cleanly. */
START_TEST(test_stop_from_another_thread)
{
	struct guest *g = attach();
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, stop_later, g), 0);
	ck_assert_int_eq(guest_run(g), 0);
	pthread_join(t, NULL);
	cleanup(g);
}
END_TEST

/* r[shm.doorbell.death]: the host dies, the loop ends with -EPIPE. */
START_TEST(test_host_death_ends_the_loop)
{
	struct guest *g = attach();

	close(bell[0]);
	bell[0] = dup(2);	/* something for cleanup to close */
	ck_assert_int_eq(guest_run(g), -EPIPE);
	cleanup(g);
}
END_TEST

/* -- heartbeat ----------------------------------------------------------- */

/* Samples last_heartbeat as the host would, until told to stop: the
 * largest staleness seen (host_now - last_heartbeat). */
struct watcher {
	pthread_t	th;
	atomic_int	stop;
	uint64_t	worst;
};

static void *
watch(void *arg)
{
	struct watcher *w = arg;
	struct hp_peer_entry *e = hp_segment_peer(&seg, 1);

	while (!atomic_load(&w->stop)) {
		/* the time first: the watcher preempted between the two
		 * reads sees a newer beat, not a staler one */
		uint64_t now = hp_now_ns(), beat = hp_load_relaxed_u64(&e->last_heartbeat);

		if (now > beat && now - beat > w->worst)
			w->worst = now - beat;
		usleep(2000);
	}
	return NULL;
}

#define HB_INTERVAL	(200 * 1000000ull)	/* scheduling noise cannot fail it */
#define HB_WAIT_MS	1000			/* five intervals */

/* A guest attached with a 200 ms heartbeat, the host's end, channel 2
 * opened by the host for the guest to send on, and the watcher running. */
static struct guest *
hb_setup(struct watcher *w)
{
	struct guest *g;

	heartbeat_ns = HB_INTERVAL;
	g = attach();
	heartbeat_ns = 0;
	host_init();
	ck_assert_int_eq(hp_chan_activate(&hview.chans[2], seg.params.initial_credit), 0);
	w->worst = 0;
	atomic_store(&w->stop, 0);
	ck_assert_int_eq(pthread_create(&w->th, NULL, watch, w), 0);
	return g;
}

static void
hb_check(struct watcher *w)
{
	atomic_store(&w->stop, 1);
	pthread_join(w->th, NULL);
	/* r[shm.crash.heartbeat]: the host ends a guest stale by 2 intervals */
	ck_assert_msg(w->worst < 2 * HB_INTERVAL,
		      "heartbeat stale by %llu ms while waiting (interval %llu ms)",
		      (unsigned long long)(w->worst / 1000000),
		      (unsigned long long)(HB_INTERVAL / 1000000));
}

/* r[shm.crash.heartbeat] r[shm.flow.zero-credit]: a guest waiting for
 * credit for five intervals beats all along, and its timeout holds. */
START_TEST(test_heartbeat_while_waiting_for_credit)
{
	struct guest_stats st = { .size = sizeof(st) };
	struct watcher w;
	struct guest *g = hb_setup(&w);
	uint8_t item[8] = { 0 };

	/* the receiver's credit is used up */
	hp_store_release_u32(&hview.chans[2].granted_total, 0);
	ck_assert_int_eq(guest_chan_send(g, 2, item, sizeof(item), HB_WAIT_MS), -ETIMEDOUT);
	hb_check(&w);
	guest_get_stats(g, &st);
	ck_assert_uint_eq(st.credit_waits, 1);
	cleanup(g);
}
END_TEST

/* A thread of this process, by its id, and the state /proc last gave it
 * ('S': asleep), for a thread that acts once the guest's thread sleeps. */
struct sleeper {
	pid_t	tid;
	char	state;
};

static char
thread_state(pid_t tid)
{
	char buf[256], *paren;
	ssize_t n;
	int fd;

	/* no stdio: its malloc could wait on a lock the sleeper holds */
	snprintf(buf, sizeof(buf), "/proc/self/task/%d/stat", (int)tid);
	if ((fd = open(buf, O_RDONLY)) < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	paren = strrchr(buf, ')');
	return paren != NULL && paren[1] == ' ' ? paren[2] : '?';
}

/* Until s->tid sleeps, however long a loaded machine takes it there
 * (SLEEP_WAIT_MS at most; the test checks s->state after). */
static void
wait_asleep(struct sleeper *s)
{
	uint64_t end = hp_now_ns() + SLEEP_WAIT_MS * HP_NS_PER_MS;

	while ((s->state = thread_state(s->tid)) != 'S' && hp_now_ns() < end)
		usleep(1000);
}

static void *
grant_later(void *arg)
{
	wait_asleep(arg);	/* the sender, out of credit */
	hp_chan_grant(&hview.chans[2], 64);
	hp_endpoint_notify_credit(&host, &hview.chans[2].granted_total);
	return NULL;
}

/* r[shm.flow.zero-credit] r[shm.wakeup.credit-wait]: a sender out of credit
 * sleeps until the receiver grants more, and the grant's wake ends its
 * wait (a lost wake would run into the timeout, twice SLEEP_WAIT_MS). */
START_TEST(test_grant_wakes_a_sender_out_of_credit)
{
	struct guest_stats st = { .size = sizeof(st) };
	struct sleeper sender = { .tid = gettid() };
	struct guest *g;
	uint8_t item[8] = { 0 };
	pthread_t th;
	uint32_t id = 0;
	int rc;

	g = attach();
	host_init();
	ck_assert_int_eq(hp_chan_activate(&hview.chans[2], seg.params.initial_credit), 0);
	hp_store_release_u32(&hview.chans[2].granted_total, 0);
	ck_assert_int_eq(pthread_create(&th, NULL, grant_later, &sender), 0);
	rc = guest_chan_send(g, 2, item, sizeof(item), 2 * SLEEP_WAIT_MS);
	pthread_join(th, NULL);
	ck_assert_msg(sender.state == 'S', "the sender never slept: state %c", sender.state);
	ck_assert_int_eq(rc, 0);
	guest_get_stats(g, &st);
	ck_assert_uint_eq(st.credit_waits, 1);
	ck_assert_uint_ge(st.sleeps, 1);
	ck_assert_int_eq(host_next(&id), HP_MSG_DATA);
	ck_assert_uint_eq(id, 2);
	cleanup(g);
}
END_TEST

/* Answers the guest's first request through the host's end, once the
 * caller (arg, a struct sleeper) sleeps waiting for it. */
static void *
answer_later(void *arg)
{
	struct hp_msg_in m;
	const char *rule;
	int rc;

	while ((rc = hp_endpoint_recv(&host, &m, &rule)) == -EAGAIN)
		usleep(1000);
	if (rc != 0)
		return NULL;	/* the guest waits on: the test times out */
	hp_endpoint_release(&host, &m);
	wait_asleep(arg);
	host_answer(m.desc.id, NULL);
	return NULL;
}

/* r[shm.doorbell.optional]: a host that wakes with futexes alone. The
 * host's end rings a doorbell of its own that reaches nobody, so the
 * guest's doorbell never carries a byte; the guest, asleep in guest_call
 * on the ring's head (r[shm.wakeup.consumer-wait]), gets its answer all
 * the same. And hub's host end, towards a guest without the waiter words
 * (as hubd wakes one), wrote no doorbell byte. */
START_TEST(test_host_without_doorbell_bytes)
{
	struct guest_stats st = { .size = sizeof(st) };
	struct sleeper caller = { .tid = gettid() };
	int spy[2];
	struct guest *g;
	pthread_t th;
	int rc;

	spec_host = 1;
	g = attach();
	ck_assert_int_eq(hp_doorbell_pair(spy), 0);
	hp_peer_view_host(&seg, 1, &hview);
	ck_assert_int_eq(hp_endpoint_init_host(&host, &seg, &hview, spy[0],
			 hp_load_acquire_u32(&hview.entry->guest_features), NULL), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, answer_later, &caller), 0);
	rc = guest_call(g, "hub.ping", NULL, 0, NULL, 0, NULL, -1);
	pthread_join(th, NULL);
	ck_assert_msg(caller.state == 'S', "the caller never slept: state %c", caller.state);
	ck_assert_int_eq(rc, 0);
	guest_get_stats(g, &st);
	ck_assert_uint_ge(st.sleeps, 1);
	ck_assert_int_eq(hp_doorbell_wait(spy[1], 0), 0);
	close(spy[0]);
	close(spy[1]);
	cleanup(g);
}
END_TEST

/* struct guest_stats as libguest before 0.5 filled it, and that ABI's
 * guest_get_stats (guest_get_stats@LIBGUEST_0, compat.c) */
struct stats_0_1 {
	uint64_t	calls_in, calls_out, credit_waits, ring_waits, wakes, sleeps;
};
void	guest_get_stats_0_1(const struct guest *g, struct stats_0_1 *s);

/* guest_get_stats fills what the caller's size holds and says how much:
 * a shorter struct (an older guest.h's) only its fields, a longer one (a
 * later guest.h's) all of libguest's and zeroes the rest; a size short
 * of calls_in is refused, nothing written. A binary of before 0.5 gets
 * the counters in its layout. */
START_TEST(test_stats_size)
{
	struct {
		struct guest_stats	st;
		uint64_t		later;	/* a field of a later guest.h */
	} big;
	struct guest_stats st;
	struct stats_0_1 old;
	struct guest *g = attach();
	size_t upto_calls_out = offsetof(struct guest_stats, calls_out) +
	    sizeof(st.calls_out);

	memset(&st, 0xaa, sizeof(st));
	st.size = 0;
	ck_assert_int_eq(guest_get_stats(g, &st), -EINVAL);
	ck_assert_uint_eq(st.calls_in, 0xaaaaaaaaaaaaaaaau);
	st.size = upto_calls_out;
	ck_assert_int_eq(guest_get_stats(g, &st), 0);
	ck_assert_uint_eq(st.size, upto_calls_out);
	ck_assert_uint_eq(st.calls_in, 0);
	ck_assert_uint_eq(st.calls_out, 0);
	ck_assert_uint_eq(st.credit_waits, 0xaaaaaaaaaaaaaaaau);
	st.size = sizeof(st);
	ck_assert_int_eq(guest_get_stats(g, &st), 0);
	ck_assert_uint_eq(st.size, sizeof(st));
	ck_assert_uint_ne(st.sleeps, 0xaaaaaaaaaaaaaaaau);

	memset(&big, 0xaa, sizeof(big));
	big.st.size = sizeof(big);
	ck_assert_int_eq(guest_get_stats(g, &big.st), 0);
	ck_assert_uint_eq(big.st.size, sizeof(struct guest_stats));
	ck_assert_uint_eq(big.st.calls_in, 0);
	ck_assert_uint_eq(big.later, 0);

	memset(&old, 0xaa, sizeof(old));
	guest_get_stats_0_1(g, &old);
	ck_assert_uint_eq(old.calls_in, 0);
	ck_assert_uint_ne(old.sleeps, 0xaaaaaaaaaaaaaaaau);
	cleanup(g);
}
END_TEST

/* r[shm.crash.heartbeat]: a guest waiting for ring space (the host does
 * not consume) beats all along, and the send's timeout holds. */
START_TEST(test_heartbeat_while_waiting_for_ring_space)
{
	struct guest_stats st = { .size = sizeof(st) };
	struct watcher w;
	struct guest *g = hb_setup(&w);
	uint8_t item[8] = { 0 };
	int rc, sent = 0;

	while ((rc = guest_chan_send(g, 2, item, sizeof(item), HB_WAIT_MS)) == 0)
		sent++;
	ck_assert_msg(rc == -ETIMEDOUT, "send %d: %d", sent, rc);
	ck_assert_int_eq(sent, (int)seg.params.ring_size - 1);
	hb_check(&w);
	guest_get_stats(g, &st);
	ck_assert_uint_ge(st.ring_waits, 1);
	cleanup(g);
}
END_TEST

/* -- Goodbye ---------------------------------------------------------------- */

static int async_status = 1;

static void
async_done(void *ctx, int status, const uint8_t *result, size_t len)
{
	(void)ctx;
	(void)result;
	(void)len;
	async_status = status;
}

/* r[shm.goodbye.payload]: the host ends the guest with a Goodbye naming
 * the rule; the loop ends with -ECONNABORTED, the call in flight fails
 * with it, the reason is there to print. */
START_TEST(test_goodbye_reason)
{
	struct guest *g;
	uint8_t buf[64], item[8] = { 0 };
	int64_t n;

	g = attach();
	host_init();
	ck_assert_ptr_null(guest_goodbye_reason(g));
	async_status = 1;
	ck_assert_int_eq(guest_call_async(g, "hub.ping", NULL, 0, async_done, NULL, NULL), 0);
	ck_assert_int_gt(n = hp_msg_encode_goodbye(buf, sizeof(buf), "shm.desc.msg-type"), 0);
	host_send(HP_MSG_GOODBYE, 0, 0, buf, (size_t)n);
	ck_assert_int_eq(guest_run(g), -ECONNABORTED);
	ck_assert_int_eq(async_status, -ECONNABORTED);
	ck_assert_pstr_eq(guest_goodbye_reason(g), "shm.desc.msg-type");
	/* and everything after fails the same way */
	ck_assert_int_eq(guest_service(g), -ECONNABORTED);
	ck_assert_int_eq(guest_call(g, "hub.ping", NULL, 0, NULL, 0, NULL, 100), -ECONNABORTED);
	ck_assert_int_eq(hp_chan_activate(&hview.chans[2], seg.params.initial_credit), 0);
	ck_assert_int_eq(guest_chan_send(g, 2, item, sizeof(item), 100), -ECONNABORTED);
	cleanup(g);
}
END_TEST

/* A guest blocked in guest_call when the Goodbye comes. */
START_TEST(test_goodbye_fails_a_waiting_call)
{
	struct guest *g;
	uint8_t buf[64];
	int64_t n;

	g = attach();
	host_init();
	ck_assert_int_gt(n = hp_msg_encode_goodbye(buf, sizeof(buf), "shm.flow.remaining-credit"), 0);
	host_send(HP_MSG_GOODBYE, 0, 0, buf, (size_t)n);
	ck_assert_int_eq(guest_call(g, "hub.ping", NULL, 0, NULL, 0, NULL, -1), -ECONNABORTED);
	ck_assert_pstr_eq(guest_goodbye_reason(g), "shm.flow.remaining-credit");
	cleanup(g);
}
END_TEST

/* A Goodbye that does not decode still ends the loop. */
START_TEST(test_goodbye_undecodable)
{
	static const uint8_t bad[] = { 40, 's', 'h' };	/* 40 bytes promised */
	struct guest *g = attach();

	host_init();
	host_send(HP_MSG_GOODBYE, 0, 0, bad, sizeof(bad));
	ck_assert_int_eq(guest_run(g), -ECONNABORTED);
	ck_assert_pstr_eq(guest_goodbye_reason(g), "(undecodable goodbye)");
	cleanup(g);
}
END_TEST

/* -- guest_register ------------------------------------------------------ */

/* Refused here, the host never asked. */
START_TEST(test_register_checks_locally)
{
	char longname[HP_METHOD_NAME_MAX + 2];
	struct guest *g;
	uint32_t id;

	g = attach();
	host_init();
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ck_assert_int_eq(guest_register(g, longname, "str->str", noop, NULL), -ENAMETOOLONG);
	ck_assert_int_eq(guest_register(g, "", "str->str", noop, NULL), -EINVAL);
	/* names a log line or a terminal would take for something else, and
	 * names that are not parts between dots (proto/method.h) */
	ck_assert_int_eq(guest_register(g, "t.a\nhubd: guest kv: FAKE", "str->str", noop, NULL),
			 -EINVAL);
	ck_assert_int_eq(guest_register(g, "t.b\033[31mred", "str->str", noop, NULL), -EINVAL);
	ck_assert_int_eq(guest_register(g, "t.c d", "str->str", noop, NULL), -EINVAL);
	ck_assert_int_eq(guest_register(g, "t.\xc3\xa9", "str->str", noop, NULL), -EINVAL);
	ck_assert_int_eq(guest_register(g, "t..d", "str->str", noop, NULL), -EINVAL);
	ck_assert_int_eq(guest_register(g, ".t.d", "str->str", noop, NULL), -EINVAL);
	ck_assert_int_eq(guest_register(g, "t.d.", "str->str", noop, NULL), -EINVAL);
	ck_assert_int_eq(guest_register(g, "t.*", "str->str", noop, NULL), -EINVAL);
	ck_assert_int_eq(guest_register(g, "t.sig", "str->nope", noop, NULL), -EINVAL);
	ck_assert_int_eq(guest_register(g, "t.sig", "str", noop, NULL), -EINVAL);
	ck_assert_int_eq(guest_register(g, "t.sig", NULL, noop, NULL), -EINVAL);
	ck_assert_int_eq(host_next(&id), -1);
	/* 63 bytes is fine */
	longname[HP_METHOD_NAME_MAX] = '\0';
	host_answer(1, NULL);
	ck_assert_int_eq(guest_register(g, longname, "str->str", noop, NULL), 0);
	host_expect(HP_MSG_REQUEST, 1);
	cleanup(g);
}
END_TEST

/* A call with no method, or no arguments where it says there are some,
 * is the caller's slip: -EINVAL, nothing sent, where it crashed. */
START_TEST(test_call_checks_locally)
{
	uint8_t res[64];
	size_t rlen = 1;
	struct guest *g;
	uint32_t id;

	g = attach();
	host_init();
	ck_assert_int_eq(guest_call(g, NULL, NULL, 0, res, sizeof(res), &rlen, 100), -EINVAL);
	ck_assert_uint_eq(rlen, 0);
	ck_assert_int_eq(guest_call(g, "t.echo", NULL, 3, res, sizeof(res), &rlen, 100),
			 -EINVAL);
	ck_assert_int_eq(guest_call_async(g, NULL, NULL, 0, NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(guest_call_async(g, "t.echo", NULL, 3, NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(host_next(&id), -1);
	cleanup(g);
}
END_TEST

/* The host's User errors, told apart by the shared strings. */
START_TEST(test_register_maps_host_errors)
{
	static const struct { const char *why; int rc; } cases[] = {
		{ HP_SVC_REG_TAKEN, -EEXIST },
		{ HP_SVC_REG_TOO_MANY, -ENOSPC },
		{ HP_SVC_REG_NOT_YOURS, -EPERM },
		{ "the hub. prefix is the host's", -EREMOTEIO },
		{ HP_METHOD_NAME_CHAR, -EINVAL },
		{ HP_METHOD_NAME_PART, -EINVAL },
		{ NULL, 0 },
	};
	struct guest *g = attach();

	host_init();
	for (uint32_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		host_answer(i + 1, cases[i].why);
		int rc = guest_register(g, "t.method", "str->str", noop, NULL);

		ck_assert_msg(rc == cases[i].rc, "host said '%s': got %d, want %d",
			      cases[i].why ? cases[i].why : "ok", rc, cases[i].rc);
		host_expect(HP_MSG_REQUEST, i + 1);
	}
	cleanup(g);
}
END_TEST

/* -- channels --------------------------------------------------------------- */

static void
close_chan(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	size_t pos = 0;
	uint64_t chan;

	(void)ctx;
	ck_assert_int_eq(guest_pc_get_u64(args, len, &pos, &chan), 0);
	ck_assert_int_eq(guest_chan_close(guest_call_guest(c), (uint32_t)chan), 0);
	guest_reply(c, NULL, 0);
}

/* r[shm.flow.channel-id-reuse]: a channel the host opened for the guest
 * to send on is closed even when nothing was sent, once; given again in
 * a request, it can be closed again. */
START_TEST(test_close_without_sending)
{
	struct guest *g;
	uint8_t args[16], req[32], item[8] = { 0 };
	struct hp_pc_enc e;
	int64_t n;

	g = attach();
	host_init();
	ck_assert_int_eq(hp_chan_activate(&hview.chans[2], seg.params.initial_credit), 0);
	ck_assert_int_eq(hp_chan_activate(&hview.chans[4], seg.params.initial_credit), 0);
	ck_assert_int_eq(guest_chan_close(g, 2), 0);
	host_expect(HP_MSG_CLOSE, 2);
	ck_assert_int_eq(guest_chan_reset(g, 4), 0);
	host_expect(HP_MSG_RESET, 4);
	/* once only: the host may not have freed it yet */
	ck_assert_int_eq(guest_chan_close(g, 2), -ENOTCONN);
	ck_assert_int_eq(guest_chan_send(g, 2, item, sizeof(item), 0), -ENOTCONN);
	ck_assert_int_eq(host_next(&(uint32_t){ 0 }), -1);
	/* not ours: never opened, or the guest's own parity */
	ck_assert_int_eq(guest_chan_close(g, 6), -ENOTCONN);
	ck_assert_int_eq(guest_chan_close(g, 3), -ENOTCONN);
	/* the host frees 2 (it saw the Close), opens it again and gives it
	 * to the guest in a call */
	hp_chan_free(&hview.chans[2]);
	ck_assert_int_eq(hp_chan_activate(&hview.chans[2], seg.params.initial_credit), 0);
	host_answer(1, NULL);
	ck_assert_int_eq(guest_register(g, "t.close", "chan<u64>->unit", close_chan, NULL), 0);
	host_expect(HP_MSG_REQUEST, 1);
	hp_pc_enc_init(&e, args, sizeof(args));
	hp_pc_put_u64(&e, 2);
	ck_assert_int_gt(n = hp_msg_encode_request(req, sizeof(req), NULL, args, e.len), 0);
	host_send(HP_MSG_REQUEST, 7, hp_method_id("t.close", 7), req, (size_t)n);
	ck_assert_int_eq(guest_service(g), 0);
	host_expect(HP_MSG_CLOSE, 2);
	host_expect(HP_MSG_RESPONSE, 7);
	cleanup(g);
}
END_TEST

struct rx_seen {
	int	items;
	int	ends;
	int	status;
};

static void
rx_item(void *ctx, const uint8_t *item, size_t len)
{
	(void)item;
	(void)len;
	((struct rx_seen *)ctx)->items++;
}

static void
rx_end(void *ctx, int status)
{
	((struct rx_seen *)ctx)->ends++;
	((struct rx_seen *)ctx)->status = status;
}

/* r[shm.flow.reset] r[shm.flow.channel-id-reuse]: a receiver that
 * resets a channel it opened tells the sender to stop, once; items the
 * sender sent before it knew are dropped (their credit granted back),
 * and the entry stays Active until the sender's own Reset, on which it
 * is freed and on_end runs. */
START_TEST(test_receiver_stops_a_channel)
{
	struct rx_seen seen = { 0, 0, 0 };
	uint8_t item[8] = { 0 };
	struct guest *g;
	int64_t chan;
	uint32_t granted;

	g = attach();
	host_init();
	ck_assert_int_gt(chan = guest_chan_open(g, rx_item, rx_end, &seen), 0);
	host_send(HP_MSG_DATA, (uint32_t)chan, 0, item, sizeof(item));
	ck_assert_int_eq(guest_service(g), 0);
	ck_assert_int_eq(seen.items, 1);
	ck_assert_int_eq(guest_chan_reset(g, (uint32_t)chan), 0);
	host_expect(HP_MSG_RESET, (uint32_t)chan);
	ck_assert_int_eq(guest_chan_reset(g, (uint32_t)chan), -ENOTCONN);
	ck_assert_int_eq(guest_chan_close(g, (uint32_t)chan), -ENOTCONN);
	/* sent before the host saw the stop: dropped, granted back */
	granted = hp_load_acquire_u32(&hview.chans[chan].granted_total);
	host_send(HP_MSG_DATA, (uint32_t)chan, 0, item, sizeof(item));
	ck_assert_int_eq(guest_service(g), 0);
	ck_assert_int_eq(seen.items, 1);
	ck_assert_uint_eq(hp_load_acquire_u32(&hview.chans[chan].granted_total),
			  granted + sizeof(item));
	ck_assert_int_eq(hp_chan_state(&hview.chans[chan]), HP_CHAN_ACTIVE);
	ck_assert_int_eq(seen.ends, 0);
	/* the sender's end: nothing more follows, the id is free */
	host_send(HP_MSG_RESET, (uint32_t)chan, 0, NULL, 0);
	ck_assert_int_eq(guest_service(g), 0);
	ck_assert_int_eq(seen.ends, 1);
	ck_assert_int_eq(seen.status, -ECONNRESET);
	ck_assert_int_eq(hp_chan_state(&hview.chans[chan]), HP_CHAN_FREE);
	ck_assert_int_eq(host_next(&(uint32_t){ 0 }), -1);
	cleanup(g);
}
END_TEST

/* r[shm.flow.ordering.receiver]: a receiver that has taken everything in
 * its ring grants all it consumed, not only whole quarters of the
 * window: a sender whose next item needs the rest of the window (100
 * bytes sent, then one of initial_credit - 50) is not left waiting for a
 * grant held back by a receiver with nothing left to consume. */
START_TEST(test_idle_receiver_grants_the_remainder)
{
	struct rx_seen seen = { 0, 0, 0 };
	uint8_t item[100] = { 0 };
	struct guest *g;
	int64_t chan;
	uint32_t window;

	g = attach();
	host_init();
	window = seg.params.initial_credit;
	ck_assert_int_gt(chan = guest_chan_open(g, rx_item, rx_end, &seen), 0);
	host_send(HP_MSG_DATA, (uint32_t)chan, 0, item, sizeof(item));
	ck_assert_int_eq(guest_service(g), 0);
	ck_assert_int_eq(seen.items, 1);
	ck_assert_int_ge(hp_chan_credit(&hview.chans[chan], sizeof(item)), window - 50);
	cleanup(g);
}
END_TEST

/* The credit the host has left to send on chan, having sent sent bytes. */
static int64_t
credit_left(int64_t chan, uint32_t sent)
{
	return hp_chan_credit(&hview.chans[chan], sent);
}

/* n items of 20 bytes on chan (inline: no slot) */
static void
host_items(int64_t chan, int n)
{
	uint8_t item[20] = { 0 };

	for (int i = 0; i < n; i++)
		host_send(HP_MSG_DATA, (uint32_t)chan, 0, item, sizeof(item));
}

/* r[shm.flow.ordering.receiver] r[shm.flow.zero-credit]: on a held
 * channel an item's credit goes back when the receiver reports it
 * taken (guest_chan_consumed), not when on_item returns nor when the
 * ring is empty: a sender that filled the window waits until then. A
 * quarter of the window at a time, all of it once the receiver holds
 * nothing; what it holds goes back at once when it stops the channel. */
START_TEST(test_held_channel_grants_as_items_are_taken)
{
	struct rx_seen seen = { 0, 0, 0 };
	struct guest *g;
	int64_t chan;
	uint32_t sent = 0;

	credit_window = 120;	/* 6 items (the ring holds 7), a quarter is 30 */
	g = attach();
	host_init();
	ck_assert_int_gt(chan = guest_chan_open(g, rx_item, rx_end, &seen), 0);
	ck_assert_int_eq(guest_chan_hold(g, (uint32_t)chan), 0);
	ck_assert_int_eq(guest_chan_hold(g, 0), -ENOTCONN);
	ck_assert_int_eq(guest_chan_hold(g, (uint32_t)chan + 2), -ENOTCONN);	/* not opened */
	ck_assert_int_eq(guest_chan_consumed(g, (uint32_t)chan + 2, 0), -ENOTCONN);
	ck_assert_int_eq(guest_chan_consumed(g, (uint32_t)chan, 1), -EINVAL);	/* holds none */

	/* the window filled: delivered, all held, none granted back */
	host_items(chan, 6);
	sent += 120;
	ck_assert_int_eq(guest_service(g), 0);
	ck_assert_int_eq(seen.items, 6);
	ck_assert_int_eq(credit_left(chan, sent), 0);
	ck_assert_int_eq(guest_service(g), 0);		/* an idle ring grants nothing held */
	ck_assert_int_eq(credit_left(chan, sent), 0);
	ck_assert_int_eq(guest_chan_consumed(g, (uint32_t)chan, 121), -EINVAL);

	/* taken: back a quarter at a time, several items in one report */
	ck_assert_int_eq(guest_chan_consumed(g, (uint32_t)chan, 20), 0);
	ck_assert_int_eq(credit_left(chan, sent), 0);
	ck_assert_int_eq(guest_chan_consumed(g, (uint32_t)chan, 20), 0);
	ck_assert_int_eq(credit_left(chan, sent), 40);
	ck_assert_int_eq(guest_chan_consumed(g, (uint32_t)chan, 60), 0);
	ck_assert_int_eq(credit_left(chan, sent), 100);
	host_items(chan, 2);
	sent += 40;
	ck_assert_int_eq(guest_service(g), 0);
	ck_assert_int_eq(seen.items, 8);
	ck_assert_int_eq(credit_left(chan, sent), 60);
	/* all taken: the remainder below a quarter goes back too */
	ck_assert_int_eq(guest_chan_consumed(g, (uint32_t)chan, 50), 0);
	ck_assert_int_eq(credit_left(chan, sent), 110);
	ck_assert_int_eq(guest_chan_consumed(g, (uint32_t)chan, 10), 0);
	ck_assert_int_eq(credit_left(chan, sent), 120);

	/* the receiver stops: what it holds goes back with the Reset,
	 * and its reports change nothing after */
	host_items(chan, 3);
	sent += 60;
	ck_assert_int_eq(guest_service(g), 0);
	ck_assert_int_eq(guest_chan_consumed(g, (uint32_t)chan, 20), 0);
	ck_assert_int_eq(credit_left(chan, sent), 60);
	ck_assert_int_eq(guest_chan_reset(g, (uint32_t)chan), 0);
	host_expect(HP_MSG_RESET, (uint32_t)chan);
	ck_assert_int_eq(credit_left(chan, sent), 120);
	ck_assert_int_eq(guest_chan_consumed(g, (uint32_t)chan, 20), 0);
	ck_assert_int_eq(credit_left(chan, sent), 120);
	/* the sender's end: the id is not the receiver's any more */
	host_send(HP_MSG_RESET, (uint32_t)chan, 0, NULL, 0);
	ck_assert_int_eq(guest_service(g), 0);
	ck_assert_int_eq(seen.ends, 1);
	ck_assert_int_eq(guest_chan_consumed(g, (uint32_t)chan, 0), -ENOTCONN);
	ck_assert_int_eq(guest_chan_hold(g, (uint32_t)chan), -ENOTCONN);
	cleanup(g);
}
END_TEST

/* -- postcard helpers -------------------------------------------------------- */

static int handled;

static void
count_and_reply(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	handled++;
	guest_reply(c, NULL, 0);
}

/* A Request with no metadata and no arguments for method t.m. */
static void
host_request(uint32_t id)
{
	static const uint8_t none[1] = { 0 };

	host_send(HP_MSG_REQUEST, id, hp_method_id("t.m", 3), none, sizeof(none));
}

/* r[shm.flow.reset]: a send looks at what came and takes in the ends
 * there, the receiver's Reset among them, without running a handler: a
 * request that came first runs after, in order, from the loop. A send
 * that waits for credit runs the handlers of what comes meanwhile. */
START_TEST(test_send_takes_ends_runs_handlers_in_waits)
{
	struct guest *g = attach();
	uint8_t item[8] = { 0 };
	uint32_t id;

	host_init();
	handled = 0;
	host_answer(1, NULL);
	ck_assert_int_eq(guest_register(g, "t.m", "->unit", count_and_reply, NULL), 0);
	host_expect(HP_MSG_REQUEST, 1);
	ck_assert_int_eq(hp_chan_activate(&hview.chans[2], seg.params.initial_credit), 0);
	ck_assert_int_eq(hp_chan_activate(&hview.chans[4], seg.params.initial_credit), 0);
	/* a request, then the receiver of channel 2 stops it */
	host_request(10);
	host_send(HP_MSG_RESET, 2, 0, NULL, 0);
	ck_assert_int_eq(guest_chan_send(g, 2, item, sizeof(item), 1000), -ENOTCONN);
	ck_assert_int_eq(handled, 0);
	ck_assert_int_eq(host_next(&id), -1);	/* nothing answered, nothing sent */
	ck_assert_int_eq(guest_service_wait(g, 0), 0);
	ck_assert_int_eq(handled, 1);
	host_expect(HP_MSG_RESPONSE, 10);
	/* channel 4 out of credit: the requests that come are served */
	hp_store_release_u32(&hview.chans[4].granted_total, 0);
	host_request(11);
	host_request(12);
	ck_assert_int_eq(guest_chan_send(g, 4, item, sizeof(item), 200), -ETIMEDOUT);
	ck_assert_int_eq(handled, 3);
	host_expect(HP_MSG_RESPONSE, 11);
	host_expect(HP_MSG_RESPONSE, 12);
	cleanup(g);
}
END_TEST

/* libguest's hint to its next wait (wait.c): a call to another guest
 * through the host, or an answer to one that came through it, sleeps at
 * once after quiet; a call of the host's own services, whose answer
 * comes from the host itself, does not. */
START_TEST(test_sleep_first_hint)
{
	struct guest *g = attach();

	host_init();
	handled = 0;
	host_answer(1, NULL);
	ck_assert_int_eq(guest_register(g, "t.m", "->unit", count_and_reply, NULL), 0);
	host_expect(HP_MSG_REQUEST, 1);
	ck_assert_int_eq(g->ep.sleep_first, 0);		/* hub.register: the host's */
	ck_assert_int_eq(guest_call_async(g, "hub.ping", NULL, 0, async_done, NULL, NULL), 0);
	ck_assert_int_eq(g->ep.sleep_first, 0);
	ck_assert_int_eq(guest_call_async(g, "kv.get", NULL, 0, async_done, NULL, NULL), 0);
	ck_assert_int_eq(g->ep.sleep_first, 1);
	g->ep.sleep_first = 0;
	host_request(10);
	ck_assert_int_eq(guest_service_wait(g, 0), 0);
	ck_assert_int_eq(handled, 1);
	ck_assert_int_eq(g->ep.sleep_first, 1);
	cleanup(g);
}
END_TEST

/* -- guest_reply_status, and the statuses a caller makes of what came -------- */

static int rs_status, rs_rc, rs_rc2, rs_sent;
static const char *rs_text;

/* Answers with guest_reply_status(rs_status, rs_text); refused, it
 * notes whether anything went, and answers Ok; then answers again. */
static void
status_handler(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	uint32_t id;

	(void)args;
	(void)len;
	(void)ctx;
	rs_sent = -1;
	if ((rs_rc = guest_reply_status(c, rs_status, rs_text)) != 0) {
		rs_sent = host_next(&id) != -1;
		guest_reply(c, NULL, 0);
	}
	rs_rc2 = guest_reply_status(c, -ECANCELED, NULL);
}

/* The guest's Response to id, copied to buf and decoded into r (whose
 * meta.entries point into buf). */
static void
host_response(uint32_t id, uint8_t *buf, size_t cap, struct hp_response *r)
{
	struct hp_msg_in m;
	const char *rule = NULL;
	size_t n;

	ck_assert_msg(hp_endpoint_recv(&host, &m, &rule) == 0, "no answer (%s)", rule);
	ck_assert(m.desc.msg_type == HP_MSG_RESPONSE && m.desc.id == id);
	ck_assert_uint_le(m.len, cap);
	memcpy(buf, m.payload, n = m.len);
	hp_endpoint_release(&host, &m);
	ck_assert_int_eq(hp_msg_decode_response(buf, n, r), 0);
}

/* Whether r carries exactly the one String entry key: value (key NULL:
 * no metadata). */
static int
only_meta(const struct hp_response *r, const char *key, const char *value)
{
	if (key == NULL)
		return r->meta.count == 0;
	return r->meta.count == 1 && r->meta.entries[0].type == HP_META_STRING &&
	    r->meta.entries[0].key_len == strlen(key) &&
	    memcmp(r->meta.entries[0].key, key, strlen(key)) == 0 &&
	    r->meta.entries[0].value_len == strlen(value) &&
	    memcmp(r->meta.entries[0].value, value, strlen(value)) == 0;
}

/* Whether r's Err(User) string is text (NULL: no value at all). */
static int
user_text(const struct hp_response *r, const char *text)
{
	struct hp_pc_dec d;
	const char *s;
	size_t n;

	if (text == NULL)
		return r->value_len == 0;
	hp_pc_dec_init(&d, r->value, r->value_len);
	return hp_pc_get_str(&d, &s, &n) == 0 && n == strlen(text) &&
	    memcmp(s, text, n) == 0 && hp_pc_remaining(&d) == 0;
}

/* What guest_reply_status puts on the wire for each status (doc/protocol.md,
 * section 6): Err(User(text)) with error.kind for unreachable and
 * timeout, the kind with error.text for those without text of their own;
 * another status sends nothing, text that is not UTF-8 goes with U+FFFD
 * for each bad byte; a second answer is refused. */
START_TEST(test_reply_status_encoding)
{
	static const struct {
		int		status;
		const char	*text;
		int		rc;
		uint32_t	error;
		const char	*user;	/* Err(User)'s string */
		const char	*key, *value;
	} cases[] = {
		{ -EHOSTUNREACH, "no route", 0, HP_ERR_USER, "no route",
		  HP_META_ERROR_KIND, "unreachable" },
		{ -ETIMEDOUT, NULL, 0, HP_ERR_USER, "the remote side timed out",
		  HP_META_ERROR_KIND, "timeout" },
		{ -EREMOTEIO, "plain", 0, HP_ERR_USER, "plain", NULL, NULL },
		{ -ENOSYS, "gone over there", 0, HP_ERR_UNKNOWN_METHOD, NULL,
		  HP_META_ERROR_TEXT, "gone over there" },
		{ -EBADMSG, "h\xc3\xa9", 0, HP_ERR_INVALID_PAYLOAD, NULL, HP_META_ERROR_TEXT,
		  "h\xc3\xa9" },
		{ -ECANCELED, NULL, 0, HP_ERR_CANCELLED, NULL, NULL, NULL },
		{ -EPERM, "x", -EINVAL, 0, NULL, NULL, NULL },
		{ 0, "x", -EINVAL, 0, NULL, NULL, NULL },
		/* not UTF-8: sent, the bad byte as U+FFFD */
		{ -ETIMEDOUT, "bad \xff", 0, HP_ERR_USER, "bad \xef\xbf\xbd",
		  HP_META_ERROR_KIND, "timeout" },
	};
	struct guest *g = attach();
	struct hp_meta_entry meta[4];
	struct hp_response r;
	uint8_t buf[256];

	host_init();
	host_answer(1, NULL);
	ck_assert_int_eq(guest_register(g, "t.m", "->unit", status_handler, NULL), 0);
	host_expect(HP_MSG_REQUEST, 1);
	for (uint32_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rs_status = cases[i].status;
		rs_text = cases[i].text;
		host_request(10 + i);
		ck_assert_int_eq(guest_service_wait(g, 0), 0);
		ck_assert_msg(rs_rc == cases[i].rc, "case %u: %d", i, rs_rc);
		ck_assert_int_eq(rs_rc2, -EALREADY);
		r = (struct hp_response){ .meta = { .entries = meta, .cap = 4 } };
		host_response(10 + i, buf, sizeof(buf), &r);
		if (cases[i].rc != 0) {
			ck_assert_int_eq(rs_sent, 0);	/* nothing before the Ok */
			ck_assert_int_eq(r.result, HP_RESULT_OK);
			continue;
		}
		ck_assert_int_eq(r.result, HP_RESULT_ERR);
		ck_assert_int_eq(r.error, cases[i].error);
		ck_assert_msg(user_text(&r, cases[i].user), "case %u: value", i);
		ck_assert_msg(only_meta(&r, cases[i].key, cases[i].value), "case %u: metadata", i);
	}
	cleanup(g);
}
END_TEST

/* A Response with error code, User string user (if not NULL) and up to
 * two metadata entries key=value (String; a key starting with '#': the
 * same as Bytes). */
static void
host_answer_meta(uint32_t id, uint32_t code, const char *user, const char *k1,
		 const char *v1, const char *k2, const char *v2)
{
	struct hp_meta_entry me[2];
	struct hp_response r = { .meta = { .entries = me, .cap = 2 },
				 .result = HP_RESULT_ERR, .error = code };
	const char *k[2] = { k1, k2 }, *v[2] = { v1, v2 };
	uint8_t val[128], buf[256];
	struct hp_pc_enc e;
	int64_t n;

	for (int i = 0; i < 2 && k[i] != NULL; i++) {
		int bytes = k[i][0] == '#';

		me[i] = (struct hp_meta_entry){ .key = k[i] + bytes, .key_len = strlen(k[i] + bytes),
			.type = bytes ? HP_META_BYTES : HP_META_STRING,
			.value = (const uint8_t *)v[i], .value_len = strlen(v[i]) };
		r.meta.count++;
	}
	hp_pc_enc_init(&e, val, sizeof(val));
	if (user != NULL) {
		hp_pc_put_str(&e, user, strlen(user));
		r.value = val;
		r.value_len = e.len;
	}
	ck_assert_int_gt(n = hp_msg_encode_response(buf, sizeof(buf), &r), 0);
	host_send(HP_MSG_RESPONSE, id, 0, buf, (size_t)n);
}

static int got_status;
static char got_text[64];

static void
got(void *ctx, int status, const uint8_t *result, size_t len)
{
	(void)ctx;
	got_status = status;
	snprintf(got_text, sizeof(got_text), "%.*s", result != NULL ? (int)len : 6,
		 result != NULL ? (const char *)result : "(NULL)");
}

/* The caller's side: error.kind makes an Err(User) -EHOSTUNREACH or
 * -ETIMEDOUT (another value: nothing), error.text gives a kind without
 * text its text; the host's hub.error wins over both. */
START_TEST(test_status_of_error_kinds)
{
	static const struct {
		uint32_t	code;
		const char	*user, *k1, *v1, *k2, *v2;
		int		status;
		const char	*text;
	} cases[] = {
		{ HP_ERR_USER, "a", HP_META_ERROR_KIND, "unreachable", NULL, NULL,
		  -EHOSTUNREACH, "a" },
		{ HP_ERR_USER, "b", HP_META_ERROR_KIND, "timeout", NULL, NULL, -ETIMEDOUT, "b" },
		{ HP_ERR_USER, "c", HP_META_ERROR_KIND, "elsewhere", NULL, NULL, -EREMOTEIO, "c" },
		{ HP_ERR_USER, "d", "#" HP_META_ERROR_KIND, "timeout", NULL, NULL, -EREMOTEIO, "d" },
		{ HP_ERR_USER, "e", HP_META_ERROR_KIND, "unreachable", HP_META_HUB_ERROR, "e",
		  -ECONNREFUSED, "e" },
		{ HP_ERR_USER, "f", HP_META_ERROR_TEXT, "not for User", NULL, NULL, -EREMOTEIO, "f" },
		{ HP_ERR_INVALID_PAYLOAD, NULL, HP_META_ERROR_TEXT, "bad arg", NULL, NULL,
		  -EBADMSG, "bad arg" },
		{ HP_ERR_UNKNOWN_METHOD, NULL, NULL, NULL, NULL, NULL, -ENOSYS, "no such method" },
		{ HP_ERR_UNKNOWN_METHOD, NULL, "#" HP_META_ERROR_TEXT, "bytes", NULL, NULL,
		  -ENOSYS, "no such method" },
		{ HP_ERR_CANCELLED, NULL, HP_META_ERROR_TEXT, "x", HP_META_HUB_ERROR, "guest died",
		  -ECANCELED, "guest died" },
		{ HP_ERR_CANCELLED, NULL, HP_META_ERROR_KIND, "timeout", NULL, NULL,
		  -ECANCELED, "cancelled" },
	};
	struct guest *g = attach();
	uint32_t id;

	host_init();
	for (uint32_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		got_status = 1;
		ck_assert_int_eq(guest_call_async(g, "x.y", NULL, 0, got, NULL, &id), 0);
		host_expect(HP_MSG_REQUEST, id);
		host_answer_meta(id, cases[i].code, cases[i].user, cases[i].k1, cases[i].v1,
				 cases[i].k2, cases[i].v2);
		ck_assert_int_eq(guest_service_wait(g, 1000), 0);
		ck_assert_msg(got_status == cases[i].status && strcmp(got_text, cases[i].text) == 0,
			      "case %u: %d '%s', want %d '%s'", i, got_status, got_text,
			      cases[i].status, cases[i].text);
	}
	cleanup(g);
}
END_TEST

START_TEST(test_pc_bytes)
{
	static const uint8_t v[] = { 'a', 0xff, 'b' };
	uint8_t buf[16];
	const uint8_t *p;
	const char *s;
	size_t pos = 0, n;

	ck_assert_int_eq(guest_pc_put_bytes(buf, sizeof(buf), &pos, v, sizeof(v)), 4);
	ck_assert_int_eq(guest_pc_put_bytes(buf, 5, &pos, v, sizeof(v)), -ENOSPC);
	ck_assert_uint_eq(pos, 4);
	pos = 0;
	ck_assert_int_eq(guest_pc_get_str(buf, 4, &pos, &s, &n), -EBADMSG);	/* not UTF-8 */
	ck_assert_int_eq(guest_pc_get_bytes(buf, 4, &pos, &p, &n), 0);
	ck_assert_uint_eq(pos, 4);
	ck_assert_uint_eq(n, 3);
	ck_assert_mem_eq(p, v, 3);
	pos = 0;
	ck_assert_int_eq(guest_pc_get_bytes(buf, 3, &pos, &p, &n), -EBADMSG);	/* cut */
}
END_TEST

/* The helpers for every type of a signature: what one writes the other
 * reads back, a value cut short or out of range is refused, and a str that
 * is not UTF-8 is never written. The bytes are checked against the
 * signature as hubd checks them. */
START_TEST(test_pc_types)
{
	static const uint8_t want[] = {
		0x03,					/* list of 3 */
		0x01, 0x01, 'a',			/* Some("a") */
		0x00,					/* None */
		0x01, 0x00,				/* Some("") */
		0x05, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f,
	};
	struct hp_sig sig;
	uint8_t buf[32];
	const char *s;
	size_t pos = 0, n;
	int64_t i;
	double f;
	int b;

	/* (list<opt<str>>,i64,bool,f64) */
	ck_assert_int_eq(guest_pc_put_len(buf, sizeof(buf), &pos, 3), 1);
	ck_assert_int_eq(guest_pc_put_opt(buf, sizeof(buf), &pos, 1), 1);
	ck_assert_int_eq(guest_pc_put_str(buf, sizeof(buf), &pos, "a", 1), 2);
	ck_assert_int_eq(guest_pc_put_opt(buf, sizeof(buf), &pos, 0), 1);
	ck_assert_int_eq(guest_pc_put_opt(buf, sizeof(buf), &pos, 7), 1);	/* any non-zero */
	ck_assert_int_eq(guest_pc_put_str(buf, sizeof(buf), &pos, "\xc0\x80", 2), -EILSEQ);
	ck_assert_int_eq(guest_pc_put_str(buf, sizeof(buf), &pos, "", 0), 1);
	ck_assert_int_eq(guest_pc_put_i64(buf, sizeof(buf), &pos, -3), 1);
	ck_assert_int_eq(guest_pc_put_bool(buf, sizeof(buf), &pos, 2), 1);
	ck_assert_int_eq(guest_pc_put_f64(buf, sizeof(buf), &pos, 1.5), 8);
	ck_assert_int_eq(guest_pc_put_f64(buf, pos + 7, &pos, 1.5), -ENOSPC);
	ck_assert_uint_eq(pos, sizeof(want));
	ck_assert_mem_eq(buf, want, sizeof(want));
	ck_assert_int_eq(hp_sig_parse("(list<opt<str>>,i64,bool,f64)->unit", &sig, NULL), 0);
	ck_assert_int_eq(hp_sig_check_args(&sig, buf, pos), 0);

	pos = 0;
	ck_assert_int_eq(guest_pc_get_len(want, sizeof(want), &pos, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(guest_pc_get_opt(want, sizeof(want), &pos, &b), 0);
	ck_assert_int_eq(b, 1);
	ck_assert_int_eq(guest_pc_get_str(want, sizeof(want), &pos, &s, &n), 0);
	ck_assert_int_eq(guest_pc_get_opt(want, sizeof(want), &pos, &b), 0);
	ck_assert_int_eq(b, 0);
	ck_assert_int_eq(guest_pc_get_opt(want, sizeof(want), &pos, &b), 0);
	ck_assert_int_eq(guest_pc_get_str(want, sizeof(want), &pos, &s, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(guest_pc_get_i64(want, sizeof(want), &pos, &i), 0);
	ck_assert_int_eq(i, -3);
	ck_assert_int_eq(guest_pc_get_bool(want, sizeof(want), &pos, &b), 0);
	ck_assert_int_eq(b, 1);
	ck_assert_int_eq(guest_pc_get_f64(want, sizeof(want) - 1, &pos, &f), -EBADMSG);
	ck_assert_int_eq(guest_pc_get_f64(want, sizeof(want), &pos, &f), 0);
	ck_assert(f == 1.5);
	ck_assert_uint_eq(pos, sizeof(want));
	/* a bool or an opt is 0 or 1; a count no larger than what is left */
	pos = 0;
	ck_assert_int_eq(guest_pc_get_bool((const uint8_t *)"\x02", 1, &pos, &b), -EBADMSG);
	ck_assert_int_eq(guest_pc_get_opt((const uint8_t *)"\x02", 1, &pos, &b), -EBADMSG);
	ck_assert_int_eq(guest_pc_get_len((const uint8_t *)"\x03\x01\x02", 3, &pos, &n), -EBADMSG);
	ck_assert_uint_eq(pos, 0);
	ck_assert_int_eq(guest_pc_get_len((const uint8_t *)"\x02\x01\x02", 3, &pos, &n), 0);
	ck_assert_uint_eq(n, 2);
}
END_TEST

/* -- the caller's slips ------------------------------------------------------ */

/* A plugin that detaches twice, or uses g after guest_detach, gets a
 * no-op and -ENOTCONN: it was a double free, and calls read freed memory. */
START_TEST(test_detached_handle_refuses)
{
	struct guest *g = attach();
	struct guest_stats st = { .size = sizeof(st) };
	struct guest_event ev;
	uint8_t res[16], item[4] = { 0 };
	size_t rlen = 1;

	guest_detach(g);
	ck_assert_uint_eq(hp_segment_peer(&seg, 1)->state, HP_PEER_GOODBYE);
	guest_detach(g);	/* a no-op */
	guest_stop(g);		/* nothing to stop */
	ck_assert_int_eq(guest_call(g, "t.m", NULL, 0, res, sizeof(res), &rlen, 100), -ENOTCONN);
	ck_assert_uint_eq(rlen, 0);
	ck_assert_int_eq(guest_call_async(g, "t.m", NULL, 0, async_done, NULL, NULL), -ENOTCONN);
	ck_assert_int_eq(guest_cancel(g, 1), -ENOTCONN);
	ck_assert_int_eq(guest_register(g, "t.m", "->unit", noop, NULL), -ENOTCONN);
	ck_assert_int_eq(guest_unregister(g, "t.m"), -ENOTCONN);
	ck_assert_int_eq(guest_describe(g, NULL, "x"), -ENOTCONN);
	ck_assert_int_eq(guest_run(g), -ENOTCONN);
	ck_assert_int_eq(guest_run_mt(g, NULL), -ENOTCONN);
	ck_assert_int_eq(guest_service(g), -ENOTCONN);
	ck_assert_int_eq(guest_service_wait(g, 0), -ENOTCONN);
	ck_assert_int_eq(guest_service_timeout_ms(g), -ENOTCONN);
	ck_assert_int_eq(guest_fd(g), -ENOTCONN);
	ck_assert_int_eq(guest_get_stats(g, &st), -ENOTCONN);
	ck_assert_int_eq(guest_chan_open_send(g), -ENOTCONN);
	ck_assert_int_eq(guest_chan_open(g, rx_item, rx_end, NULL), -ENOTCONN);
	ck_assert_int_eq(guest_chan_send(g, 2, item, sizeof(item), 0), -ENOTCONN);
	ck_assert_int_eq(guest_chan_close(g, 2), -ENOTCONN);
	ck_assert_int_eq(guest_chan_reset(g, 2), -ENOTCONN);
	ck_assert_int_eq(guest_chan_hold(g, 2), -ENOTCONN);
	ck_assert_int_eq(guest_chan_consumed(g, 2, 0), -ENOTCONN);
	ck_assert_int_eq(guest_chan_accept(g, 2, rx_item, rx_end, NULL), -ENOTCONN);
	ck_assert_int_eq(guest_advertise(g, "t.ev", "u64", 0), -ENOTCONN);
	ck_assert_int_eq(guest_publish(g, "t.ev", item, sizeof(item)), -ENOTCONN);
	ck_assert_int_eq(guest_subscribe(g, "t.ev", GUEST_DROP_OLDEST, NULL, NULL), -ENOTCONN);
	ck_assert_int_eq(guest_unsubscribe(g, 1), -ENOTCONN);
	ck_assert_int_eq(guest_next_event(g, 1, res, sizeof(res), &ev, 0), -ENOTCONN);
	ck_assert_int_eq(guest_wait_method(g, "t.m", 0), -ENOTCONN);
	/* what it was stays readable */
	ck_assert_uint_eq(guest_peer_id(g), 1);
	ck_assert_ptr_null(guest_goodbye_reason(g));
	close(bell[0]);
	hp_segment_close(&seg);
}
END_TEST

static int null_reply_rc = 1;

/* Answers with no bytes where it says there are some, then rightly. */
static void
reply_null(struct guest_call *c, const uint8_t *args, size_t len, void *ctx)
{
	(void)args;
	(void)len;
	(void)ctx;
	null_reply_rc = guest_reply(c, NULL, 5);
	guest_reply(c, NULL, 0);
}

/* A NULL buffer with a length > 0 is the caller's slip: -EINVAL and
 * nothing sent, where each read or wrote at NULL (SIGSEGV). NULL with
 * length 0 stays an empty buffer. */
START_TEST(test_null_buffers_refused)
{
	struct guest *g = attach();
	struct iovec iov[2] = { { "ab", 2 }, { NULL, 3 } };
	struct guest_event ev;
	uint8_t buf[16];
	size_t pos = 0, rlen = 1, n;
	const uint8_t *p;
	uint64_t v;
	int64_t chan;
	uint32_t id;

	host_init();
	host_answer(1, NULL);
	ck_assert_int_eq(guest_register(g, "t.m", "->unit", reply_null, NULL), 0);
	host_expect(HP_MSG_REQUEST, 1);
	/* guest_reply: refused, the call still to be answered */
	host_request(10);
	ck_assert_int_eq(guest_service_wait(g, 0), 0);
	ck_assert_int_eq(null_reply_rc, -EINVAL);
	host_expect(HP_MSG_RESPONSE, 10);
	ck_assert_int_eq(host_next(&id), -1);
	/* calls: no arguments, no room for the result */
	ck_assert_int_eq(guest_call(g, "t.m", NULL, 3, buf, sizeof(buf), &rlen, 100), -EINVAL);
	ck_assert_int_eq(guest_call(g, "t.m", NULL, 0, NULL, 8, &rlen, 100), -EINVAL);
	/* a channel of ours to send on */
	ck_assert_int_gt(chan = guest_chan_open_send(g), 0);
	ck_assert_int_eq(guest_chan_send(g, (uint32_t)chan, NULL, 3, 0), -EINVAL);
	ck_assert_int_eq(guest_chan_send_batch(g, (uint32_t)chan, iov, 2, 0), -EINVAL);
	ck_assert_int_eq(guest_chan_send_batch(g, (uint32_t)chan, NULL, 1, 0), -EINVAL);
	ck_assert_int_eq(guest_publish(g, "t.ev", NULL, 3), -EINVAL);
	ck_assert_int_eq(guest_next_event(g, 1, NULL, 8, &ev, 0), -EINVAL);
	ck_assert_int_eq(host_next(&id), -1);	/* nothing sent */
	/* an empty one is fine */
	ck_assert_int_eq(guest_chan_send(g, (uint32_t)chan, NULL, 0, 0), 0);
	ck_assert_int_eq(guest_chan_send_batch(g, (uint32_t)chan, NULL, 0, 0), 0);
	/* the postcard helpers */
	ck_assert_int_eq(guest_pc_put_bytes(buf, sizeof(buf), &pos, NULL, 3), -EINVAL);
	ck_assert_int_eq(guest_pc_put_str(buf, sizeof(buf), &pos, NULL, 3), -EINVAL);
	ck_assert_int_eq(guest_pc_put_u64(NULL, 8, &pos, 1), -EINVAL);
	ck_assert_int_eq(guest_pc_get_u64(NULL, 8, &pos, &v), -EINVAL);
	ck_assert_int_eq(guest_pc_get_bytes(NULL, 8, &pos, &p, &n), -EINVAL);
	ck_assert_uint_eq(pos, 0);
	ck_assert_int_eq(guest_pc_put_bytes(buf, sizeof(buf), &pos, NULL, 0), 1);
	ck_assert_int_eq(guest_pc_put_u64(NULL, 0, &(size_t){ 0 }, 1), -ENOSPC);
	cleanup(g);
}
END_TEST

/* Off a microthread guest_mt_exit cannot return (noreturn): it says
 * what went wrong before it aborts, where the plugin died without a
 * word. */
START_TEST(test_mt_exit_off_a_microthread_said)
{
	char out[512] = "";
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	if ((pid = fork()) == 0) {
		setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });	/* no core file left */
		dup2(fds[1], 2);
		guest_mt_exit();
	}
	ck_assert_int_gt(pid, 0);
	close(fds[1]);
	n = read(fds[0], out, sizeof(out) - 1);
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	ck_assert_int_gt(n, 0);
	ck_assert_msg(strstr(out, "libguest: guest_mt_exit called off a microthread") != NULL,
		      "stderr: %s", out);
}
END_TEST

/* Runs guest_run_mt(g, NULL) with HUB_PROCESSORS=value, the guest told to
 * stop first (a run returns at once); its result, what it wrote to
 * standard error in err. */
static int
run_mt_with_processors(struct guest *g, const char *value, char *err, size_t cap)
{
	char tmp[] = "/tmp/hub-guestlib-err-XXXXXX";
	int fd = mkstemp(tmp), saved = dup(2), rc;
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	unlink(tmp);
	setenv("HUB_PROCESSORS", value, 1);
	guest_stop(g);
	dup2(fd, 2);
	rc = guest_run_mt(g, NULL);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, err, cap - 1, 0);
	err[n > 0 ? n : 0] = '\0';
	close(fd);
	unsetenv("HUB_PROCESSORS");
	return rc;
}

/* A HUB_PROCESSORS that is no number of processors is said, with the
 * value shown safe for a terminal and what runs instead: it was ignored,
 * and the guest ran on one processor without a word. */
START_TEST(test_bad_processors_said)
{
	static const char *const bad[] = { "0", "257", "", "-1", "2x", "99999999999999999999" };
	struct guest *g = attach();
	char err[256];

	ck_assert_int_eq(run_mt_with_processors(g, "4 cores\033[2J", err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "libguest: HUB_PROCESSORS=\"4 cores\\x1b[2J\": not a number "
			      "of processors (1 to 256); running on 1\n") != NULL, "stderr: %s", err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(run_mt_with_processors(g, bad[i], err, sizeof(err)), 0);
		ck_assert_msg(strstr(err, "not a number of processors") != NULL, "%s: stderr: %s",
			      bad[i], err);
	}
	ck_assert_int_eq(run_mt_with_processors(g, "2", err, sizeof(err)), 0);
	ck_assert_str_eq(err, "");
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
	tcase_add_test(tc, test_foreign_segment);
	tcase_add_test(tc, test_hostile_host);
	tcase_add_test(tc, test_hostile_indices);
	tcase_add_test(tc, test_host_goodbye_ends_the_loop);
	tcase_add_test(tc, test_stop_from_another_thread);
	tcase_add_test(tc, test_host_death_ends_the_loop);
	suite_add_tcase(s, tc);

	tc = tcase_create("owed");
	tcase_add_unchecked_fixture(tc, name_files, remove_files);
	tcase_add_checked_fixture(tc, NULL, remove_files);
	tcase_set_timeout(tc, 3 * SLEEP_WAIT_MS / 1000);
	tcase_add_test(tc, test_heartbeat_while_waiting_for_credit);
	tcase_add_test(tc, test_grant_wakes_a_sender_out_of_credit);
	tcase_add_test(tc, test_host_without_doorbell_bytes);
	tcase_add_test(tc, test_heartbeat_while_waiting_for_ring_space);
	tcase_add_test(tc, test_stats_size);
	tcase_add_test(tc, test_goodbye_reason);
	tcase_add_test(tc, test_goodbye_fails_a_waiting_call);
	tcase_add_test(tc, test_goodbye_undecodable);
	tcase_add_test(tc, test_register_checks_locally);
	tcase_add_test(tc, test_call_checks_locally);
	tcase_add_test(tc, test_register_maps_host_errors);
	tcase_add_test(tc, test_close_without_sending);
	tcase_add_test(tc, test_receiver_stops_a_channel);
	tcase_add_test(tc, test_idle_receiver_grants_the_remainder);
	tcase_add_test(tc, test_held_channel_grants_as_items_are_taken);
	tcase_add_test(tc, test_send_takes_ends_runs_handlers_in_waits);
	tcase_add_test(tc, test_sleep_first_hint);
	tcase_add_test(tc, test_reply_status_encoding);
	tcase_add_test(tc, test_status_of_error_kinds);
	tcase_add_test(tc, test_pc_bytes);
	tcase_add_test(tc, test_pc_types);
	tcase_add_test(tc, test_detached_handle_refuses);
	tcase_add_test(tc, test_null_buffers_refused);
	tcase_add_test(tc, test_mt_exit_off_a_microthread_said);
	tcase_add_test(tc, test_bad_processors_said);
	suite_add_tcase(s, tc);
	return s;
}
