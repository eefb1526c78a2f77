/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* spechost: a host written from the wire spec alone, with a segment layout
 * of its own, unlike hubd's: the slot region right after the header, then
 * the channel tables (in reverse peer order, 4 mod 64), then the rings,
 * then the peer table last (8 mod 64). No host_features, no extension
 * table: it wakes and waits the plain spec way (futex, doorbell byte).
 *
 *	spechost [--create-only] SEGMENT_PATH GUEST_BINARY...
 *
 * Starts every guest (peer ids 1, 2, ...), answers their own requests with
 * Err(UnknownMethod) (it has no services, no method registry), calls their
 * methods by id (hp_method_id) and checks the answers, the heartbeat, the
 * slot pools and the goodbye. One line per check: "ok - GUEST: WHAT" or
 * "FAIL - GUEST: WHAT: DETAIL"; exit 0 only when every check passed.
 * --create-only makes the segment, prints nothing and leaves it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/doorbell.h"
#include "proto/futex.h"
#include "proto/layout.h"
#include "proto/method.h"
#include "proto/msg.h"
#include "proto/peer.h"
#include "proto/postcard.h"
#include "proto/ring.h"
#include "proto/slot.h"

/* The host's configuration (r[shm.handshake]). */
#define MAX_GUESTS	4u
#define RING_SIZE	16u
#define SLOT_SIZE	4100u
#define SLOTS		8u
#define MAX_CHANNELS	8u
#define INITIAL_CREDIT	8192u
#define MAX_PAYLOAD	4096u
/* room for a guest's heartbeat thread to wait its turn on a busy machine
 * (make check runs suites side by side): 2 intervals stale is a failure */
#define HEARTBEAT_NS	300000000ull

#define NS_PER_MS	1000000ull
#define ATTACH_MS	5000	/* spawn to Attached with a new epoch */
#define CALL_MS		5000	/* a call's answer */
#define STREAM_MS	20000	/* a whole counter.count stream */
#define GOODBYE_MS	5000	/* host_goodbye to the guest's exit */
#define NAP_MS		10	/* one futex wait, then look around again */
#define COUNT_N		6000u	/* items of 1-2 bytes: well over INITIAL_CREDIT */
#define MAX_REG		8	/* hub.register requests remembered per guest */

/* Where everything is (computed once, from the parameters above). */
struct layout {
	uint64_t	slot_region;	/* pool 0 the host's, pool P guest P's */
	uint64_t	pool_size;
	uint64_t	chan_region;	/* guest MAX_GUESTS's table first */
	uint64_t	chan_bytes;
	uint64_t	ring_region;	/* guest 1's pair first */
	uint64_t	ring_bytes;
	uint64_t	peer_table;
	uint64_t	total;
};

struct peer {
	char			*bin;
	char			name[64];
	uint32_t		id;
	pid_t			pid;
	int			bell;		/* our end of the doorbell */
	int			attached;
	int			gone;		/* exited or given up on */
	struct hp_peer_entry	*e;
	struct hp_ring		tx;		/* h2g: we produce */
	struct hp_ring		rx;		/* g2h: we consume */
	struct hp_slot_pool	pool;		/* the guest's: it sends from it */
	struct hp_chan_entry	*chans;
	uint32_t		epoch0;		/* before it started */
	uint32_t		next_req;
	uint32_t		requests;	/* its requests, answered UnknownMethod */
	uint32_t		nreg;		/* hub.register requests seen */
	char			reg[MAX_REG][2][64];	/* their name, signature */
};

/* A received message with its payload copied out of the ring or slot. */
struct msg {
	struct hp_desc	d;
	uint32_t	len;
	int		slot;		/* it came in a slot */
	uint8_t		buf[MAX_PAYLOAD];
};

struct reply {
	struct msg		m;
	struct hp_meta_entry	meta[16];
	struct hp_response	r;
};

static struct layout L;
static const char *seg_path;
static uint8_t *base;
static struct hp_header *hdr;
static struct hp_slot_pool host_pool;
static struct peer peers[MAX_GUESTS];
static uint32_t npeers;
static int failures;
/* for the signal handler: what to kill and remove */
static volatile pid_t kids[MAX_GUESTS];
static volatile sig_atomic_t seg_made;

/* -- output ------------------------------------------------------------- */

static void
ok(const struct peer *p, const char *fmt, ...)
{
	va_list ap;

	printf("ok - %s: ", p != NULL ? p->name : "spechost");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* Reports a failed check; -1, for "return fail(...)". */
static int
fail(const struct peer *p, const char *what, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL - %s: %s: ", p != NULL ? p->name : "spechost", what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	failures++;
	return -1;
}

/* -- time --------------------------------------------------------------- */

static uint64_t
now_ns(void)
{
	struct timespec ts;

	/* r[shm.crash.heartbeat-clock]: the guests' clock too */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t
deadline_ms(int ms)
{
	return now_ns() + (uint64_t)ms * NS_PER_MS;
}

/* One bounded futex wait on word while it holds seen. */
static void
nap(hp_atomic_u32 *word, uint32_t seen, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	hp_futex_wait(word, seen, &ts);
}

/* -- cleanup ------------------------------------------------------------ */

static void
kill_all(void)
{
	for (uint32_t i = 0; i < MAX_GUESTS; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
}

static void
cleanup(void)
{
	kill_all();
	for (uint32_t i = 0; i < MAX_GUESTS; i++) {
		if (kids[i] > 0)
			waitpid(kids[i], NULL, 0);
		kids[i] = 0;
	}
	if (seg_made)
		unlink(seg_path);
	seg_made = 0;
}

static void
on_signal(int sig)
{
	/* async-signal-safe only: kill, unlink, _exit */
	kill_all();
	if (seg_made)
		unlink(seg_path);
	_exit(128 + sig);
}

/* -- the segment -------------------------------------------------------- */

static uint64_t
round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

/* The first offset >= x that is rem mod 64. */
static uint64_t
at_mod64(uint64_t x, uint64_t rem)
{
	uint64_t y = x - x % 64 + rem;

	return y >= x ? y : y + 64;
}

static void
layout_compute(struct layout *l)
{
	uint64_t end;

	/* r[shm.slot.pool-header-size] r[shm.segment.pool-size]: the bitmap
	 * (ceil(SLOTS / 64) words) padded to 64, then the slots */
	l->pool_size = hp_slot_pool_header_size(SLOTS) + (uint64_t)SLOTS * SLOT_SIZE;
	/* 8-aligned is all the pools' u64 bitmaps need; right after the header */
	l->slot_region = HP_HEADER_SIZE;
	end = l->slot_region + (MAX_GUESTS + 1) * l->pool_size;
	/* channel tables: u32 words, 4-aligned is enough; deliberately not 64 */
	l->chan_bytes = (uint64_t)MAX_CHANNELS * HP_CHAN_ENTRY_SIZE;
	l->chan_region = at_mod64(end, 4);
	end = l->chan_region + MAX_GUESTS * l->chan_bytes;
	/* r[shm.ring.layout] r[shm.ring.alignment]: each pair 64-aligned */
	l->ring_bytes = 2ull * RING_SIZE * HP_DESC_SIZE;
	l->ring_region = round_up(end, HP_CACHE_LINE);
	end = l->ring_region + MAX_GUESTS * l->ring_bytes;
	/* the peer table last, 8-aligned for its u64s, not 64 */
	l->peer_table = at_mod64(end, 8);
	l->total = l->peer_table + MAX_GUESTS * HP_PEER_ENTRY_SIZE;
}

static uint64_t
pool_offset(uint32_t peer_id)
{
	/* r[shm.segment.host-slots] r[shm.segment.guest-slot-offset] */
	return L.slot_region + peer_id * L.pool_size;
}

static uint64_t
chan_offset(uint32_t peer_id)
{
	return L.chan_region + (MAX_GUESTS - peer_id) * L.chan_bytes;
}

static uint64_t
ring_offset(uint32_t peer_id)
{
	return L.ring_region + (peer_id - 1) * L.ring_bytes;
}

static struct hp_peer_entry *
peer_entry(uint32_t peer_id)
{
	return (struct hp_peer_entry *)(void *)(base + L.peer_table +
						 (peer_id - 1) * HP_PEER_ENTRY_SIZE);
}

/* r[shm.file.create]: open, size, map, initialise, magic last. */
static int
segment_create(const char *path)
{
	struct hp_slot_pool pool;
	uint64_t magic;
	int fd, rc;

	layout_compute(&L);
	/* r[shm.file.path] r[shm.file.permissions]: a regular file, 0600;
	 * emptied, so that every byte reads zero (r[shm.ring.initialization],
	 * the reserved bytes, every Empty state) */
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(NULL, "segment", "cannot create %s: %s", path, strerror(errno));
	seg_made = 1;
	if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)L.total) != 0) {
		close(fd);
		return fail(NULL, "segment", "cannot size %s: %s", path, strerror(errno));
	}
	/* every page now: a full tmpfs must refuse here, not SIGBUS later */
	if ((rc = posix_fallocate(fd, 0, (off_t)L.total)) != 0) {
		close(fd);
		return fail(NULL, "segment", "cannot reserve %" PRIu64 " bytes: %s",
			    L.total, strerror(rc));
	}
	/* r[shm.file.mmap-posix] */
	base = mmap(NULL, L.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED) {
		base = NULL;
		return fail(NULL, "segment", "cannot map it: %s", strerror(errno));
	}
	/* r[shm.segment.header]; reserved bytes 80..127 stay zero */
	hdr = (struct hp_header *)(void *)base;
	hdr->version = HP_VERSION;
	hdr->header_size = HP_HEADER_SIZE;
	hdr->total_size = L.total;
	hdr->max_payload_size = MAX_PAYLOAD;
	hdr->initial_credit = INITIAL_CREDIT;
	hdr->max_guests = MAX_GUESTS;
	hdr->ring_size = RING_SIZE;
	hdr->peer_table_offset = L.peer_table;
	hdr->slot_region_offset = L.slot_region;
	hdr->slot_size = SLOT_SIZE;
	hdr->slots_per_guest = SLOTS;
	hdr->max_channels = MAX_CHANNELS;
	hdr->heartbeat_interval = HEARTBEAT_NS;
	/* r[shm.segment.peer-table]: every entry's areas, used or not */
	for (uint32_t id = 1; id <= MAX_GUESTS; id++) {
		struct hp_peer_entry *e = peer_entry(id);

		e->ring_offset = ring_offset(id);
		e->slot_pool_offset = pool_offset(id);
		e->channel_table_offset = chan_offset(id);
	}
	/* r[shm.slot.pool-layout]: every slot free (bit set), no other bit */
	for (uint32_t id = 0; id <= MAX_GUESTS; id++) {
		hp_slot_pool_view(&pool, base + pool_offset(id), SLOTS, SLOT_SIZE);
		hp_slot_pool_reset(&pool);
	}
	hp_slot_pool_view(&host_pool, base + pool_offset(0), SLOTS, SLOT_SIZE);
	/* r[shm.segment.magic] last; release: whoever acquires it sees all
	 * of the above */
	memcpy(&magic, HP_MAGIC, HP_MAGIC_LEN);
	hp_store_release_u64(&hdr->magic, magic);
	return 0;
}

/* -- messages ----------------------------------------------------------- */

static const char *
type_name(uint8_t t)
{
	static const char *const names[] = { "type 0", "Request", "Response",
		"Cancel", "Data", "Close", "Reset", "Goodbye" };

	return t < sizeof(names) / sizeof(names[0]) ? names[t] : "an unknown type";
}

/* Sends one message to p: inline up to 32 bytes, else in a slot of the
 * host's pool; waits (bounded) for a slot or ring space. */
static int
send_msg(struct peer *p, uint8_t type, uint32_t id, uint64_t method,
	 const void *payload, uint32_t len, const char *what)
{
	uint64_t until = deadline_ms(CALL_MS);
	struct hp_desc d;
	uint32_t idx, gen;
	int rc;

	if (len > MAX_PAYLOAD)
		return fail(p, what, "a %u-byte payload is over max_payload_size", len);
	memset(&d, 0, sizeof(d));
	d.msg_type = type;
	d.id = id;
	d.method_id = method;
	d.payload_len = len;
	if (len <= HP_INLINE_MAX) {
		/* r[shm.payload.inline] r[shm.desc.inline-fields] */
		d.payload_slot = HP_SLOT_INLINE;
		if (len > 0)
			memcpy(d.inline_payload, payload, len);
	} else {
		/* r[shm.payload.slot] r[shm.slot.allocate]: CAS a free bit,
		 * bump the generation, payload from byte 4 */
		while ((rc = hp_slot_alloc(&host_pool, &idx, &gen)) == -EAGAIN) {
			hp_atomic_u32 *w = (hp_atomic_u32 *)(uintptr_t)&host_pool.bitmap[0];

			if (now_ns() >= until)
				return fail(p, what, "no slot of the host's pool came free");
			/* r[shm.slot.exhaustion] r[shm.wakeup.slot-wait];
			 * relaxed: only the kernel compares it */
			nap(w, hp_load_relaxed_u32(w), NAP_MS);
		}
		memcpy(hp_slot_payload(&host_pool, idx), payload, len);
		d.payload_slot = idx;
		d.payload_generation = gen;
		d.payload_offset = 0;
	}
	/* r[shm.ordering.ring-publish]: the descriptor, then head (release) */
	while ((rc = hp_ring_enqueue(&p->tx, &d)) == -EAGAIN) {
		/* relaxed: a futex value; the enqueue acquires the tail */
		uint32_t tail = hp_load_relaxed_u32(&p->e->h2g_tail);

		if (now_ns() >= until) {
			if (d.payload_slot != HP_SLOT_INLINE)
				hp_slot_free(&host_pool, d.payload_slot);
			return fail(p, what, "the host-to-guest ring stayed full");
		}
		/* r[shm.ring.full] r[shm.wakeup.producer-wait] */
		nap(&p->e->h2g_tail, tail, NAP_MS);
	}
	if (rc != 0)
		return fail(p, what, "the guest's h2g tail is out of range");
	/* r[shm.wakeup.consumer-wait] r[shm.doorbell.ring-integration] */
	hp_futex_wake(&p->e->h2g_head, INT_MAX);
	hp_doorbell_signal(p->bell);
	return 0;
}

/* libguest asks hub.register(name, signature) for each method, having made
 * it callable first: what it asked is what we may call. */
static void
note_register(struct peer *p, const struct msg *m)
{
	struct hp_meta_entry meta[4];
	struct hp_request req = { .meta = { .entries = meta, .cap = 4 } };
	struct hp_pc_dec d;
	const char *name, *sig;
	size_t nn, sn;

	if (hp_msg_decode_request(m->buf, m->len, &req) != 0)
		return;
	hp_pc_dec_init(&d, req.args, req.args_len);
	if (hp_pc_get_str(&d, &name, &nn) != 0 || hp_pc_get_str(&d, &sig, &sn) != 0 ||
	    p->nreg == MAX_REG)
		return;
	snprintf(p->reg[p->nreg][0], sizeof(p->reg[0][0]), "%.*s", (int)nn, name);
	snprintf(p->reg[p->nreg][1], sizeof(p->reg[0][1]), "%.*s", (int)sn, sig);
	p->nreg++;
}

/* Err(UnknownMethod): the answer to every request a guest makes of us. */
static int
answer_unknown(struct peer *p, const struct msg *m)
{
	struct hp_response r = { .result = HP_RESULT_ERR, .error = HP_ERR_UNKNOWN_METHOD };
	uint8_t buf[16];
	int64_t n = hp_msg_encode_response(buf, sizeof(buf), &r);

	p->requests++;
	if (m->d.method_id == hp_method_id("hub.register", 12))
		note_register(p, m);
	if (n < 0)
		return fail(p, "answering its request", "cannot encode a response");
	return send_msg(p, HP_MSG_RESPONSE, m->d.id, 0, buf, (uint32_t)n,
			"answering its request");
}

/* Takes one message off p's g2h ring, if there is one: 1, 0 none, -1 a
 * rule broken (reported). Its slot goes back to the guest's pool. */
static int
recv_one(struct peer *p, struct msg *m)
{
	const uint8_t *payload;
	const char *rule;
	struct hp_desc *d = &m->d;
	int rc;

	/* r[shm.ordering.ring-consume]: head (acquire), the descriptor,
	 * then tail (release) */
	if ((rc = hp_ring_dequeue(&p->rx, d)) == -EAGAIN)
		return 0;
	if (rc != 0)
		return fail(p, "its g2h ring", "the head is out of range");
	/* r[shm.wakeup.producer-wait] */
	hp_futex_wake(&p->e->g2h_tail, INT_MAX);
	if (d->msg_type < HP_MSG_REQUEST || d->msg_type > HP_MSG_GOODBYE)
		rc = fail(p, "its message", "msg_type %u (shm.desc.msg-type)", d->msg_type);
	m->len = d->payload_len;
	m->slot = d->payload_slot != HP_SLOT_INLINE;
	if (!m->slot) {
		if (d->payload_len > HP_INLINE_MAX || d->payload_generation != 0 ||
		    d->payload_offset != 0)
			return fail(p, "its message", "inline payload of %u bytes, "
				    "generation %u, offset %u (shm.desc.inline-fields)",
				    d->payload_len, d->payload_generation, d->payload_offset);
		memcpy(m->buf, d->inline_payload, d->payload_len);
		return rc < 0 ? -1 : 1;
	}
	if (hp_slot_check(&p->pool, d->payload_slot, d->payload_generation,
			  d->payload_offset, d->payload_len, &payload, &rule) != 0)
		return fail(p, "its message", "slot %u, generation %u (%s)",
			    d->payload_slot, d->payload_generation, rule);
	if (d->payload_len <= HP_INLINE_MAX)
		rc = fail(p, "its message", "%u bytes in a slot (shm.payload.inline)",
			  d->payload_len);
	if (d->payload_len > MAX_PAYLOAD)
		rc = fail(p, "its message", "%u bytes, over max_payload_size", d->payload_len);
	else
		memcpy(m->buf, payload, d->payload_len);
	/* r[shm.slot.free]: back to the guest's pool (atomic OR), and
	 * r[shm.wakeup.slot-wait]: wake whoever waits on that word */
	hp_slot_free(&p->pool, d->payload_slot);
	hp_futex_wake((hp_atomic_u32 *)(uintptr_t)&p->pool.bitmap[d->payload_slot / 64],
		      INT_MAX);
	return rc < 0 ? -1 : 1;
}

/* Serves every attached guest but focus: their requests answered, anything
 * else is unexpected (nothing of ours is in flight with them). */
static void
serve_others(const struct peer *focus)
{
	struct msg *m = malloc(sizeof(*m));

	if (m == NULL)
		return;
	for (uint32_t i = 0; i < npeers; i++) {
		struct peer *q = &peers[i];

		if (q == focus || !q->attached || q->gone)
			continue;
		while (recv_one(q, m) > 0) {
			if (m->d.msg_type == HP_MSG_REQUEST)
				answer_unknown(q, m);
			else
				fail(q, "idle", "an unexpected %s (id %u)",
				     type_name(m->d.msg_type), m->d.id);
		}
	}
	free(m);
}

/* Whether p has exited; its status into *status. */
static int
reaped(struct peer *p, int *status)
{
	if (p->pid <= 0)
		return 1;
	if (waitpid(p->pid, status, WNOHANG) != p->pid)
		return 0;
	kids[p->id - 1] = 0;
	p->pid = 0;
	return 1;
}

static const char *
status_text(int status)
{
	static char buf[64];

	if (WIFEXITED(status))
		snprintf(buf, sizeof(buf), "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, sizeof(buf), "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, sizeof(buf), "status %#x", status);
	return buf;
}

/* The guest went away under us: say how, and stop talking to it. */
static int
lost(struct peer *p, const char *what)
{
	int status = 0;

	p->gone = 1;
	for (int i = 0; i < 100 && !reaped(p, &status); i++)
		usleep(10000);
	if (p->pid > 0)
		return fail(p, what, "its doorbell hung up, the process still runs");
	return fail(p, what, "the guest is gone (%s)", status_text(status));
}

/* The next message from p that is not a request of its own (those are
 * answered on the way), waiting until `until`: 1, or -1 (reported). */
static int
next_msg(struct peer *p, struct msg *m, uint64_t until, const char *what)
{
	int rc;

	if (p->gone)
		return fail(p, what, "the guest is gone");
	for (;;) {
		/* read before looking: a publish after it fails the wait;
		 * relaxed: a futex value, recv_one acquires head itself */
		uint32_t seen = hp_load_relaxed_u32(&p->e->g2h_head);

		if ((rc = recv_one(p, m)) < 0)
			return -1;
		if (rc > 0) {
			if (m->d.msg_type != HP_MSG_REQUEST)
				return 1;
			if (answer_unknown(p, m) != 0)
				return -1;
			continue;
		}
		serve_others(p);
		/* r[shm.doorbell.wait] with timeout 0: drain it, and
		 * r[shm.doorbell.death]: a hang-up is the guest's death */
		if (hp_doorbell_wait(p->bell, 0) == -EPIPE)
			return lost(p, what);
		if (now_ns() >= until)
			return fail(p, what, "nothing came in time");
		/* r[shm.wakeup.consumer-wait]: sleep on g2h head, bounded */
		nap(&p->e->g2h_head, seen, NAP_MS);
	}
}

/* The signature p asked hub.register for name with, or NULL. */
static const char *
registered(const struct peer *p, const char *name)
{
	for (uint32_t i = 0; i < p->nreg; i++)
		if (strcmp(p->reg[i][0], name) == 0)
			return p->reg[i][1];
	return NULL;
}

/* Waits until p has asked hub.register for each of methods (name,
 * signature pairs, NULL-terminated) and checks the signatures: a host
 * without a registry learns this way that a method can be called. */
static int
wait_registered(struct peer *p, const char *const (*methods)[2])
{
	uint64_t until = deadline_ms(CALL_MS);
	struct msg *m = malloc(sizeof(*m));
	const char *sig;
	char list[256] = "";
	size_t k, used = 0;
	int rc = -1;

	if (m == NULL)
		return fail(p, "hub.register", "out of memory");
	for (k = 0; methods[k][0] != NULL; k++) {
		while (registered(p, methods[k][0]) == NULL) {
			/* relaxed: a futex value, recv_one acquires head */
			uint32_t seen = hp_load_relaxed_u32(&p->e->g2h_head);
			int got = recv_one(p, m);

			if (got < 0)
				goto out;
			if (got > 0) {
				if (m->d.msg_type != HP_MSG_REQUEST) {
					fail(p, "hub.register", "an unexpected %s (id %u)",
					     type_name(m->d.msg_type), m->d.id);
					goto out;
				}
				if (answer_unknown(p, m) != 0)
					goto out;
				continue;
			}
			serve_others(p);
			if (hp_doorbell_wait(p->bell, 0) == -EPIPE) {
				lost(p, "hub.register");
				goto out;
			}
			if (now_ns() >= until) {
				fail(p, "hub.register", "it never asked for %s", methods[k][0]);
				goto out;
			}
			nap(&p->e->g2h_head, seen, NAP_MS);
		}
		sig = registered(p, methods[k][0]);
		if (strcmp(sig, methods[k][1]) != 0) {
			fail(p, "hub.register", "%s with signature \"%s\", expected \"%s\"",
			     methods[k][0], sig, methods[k][1]);
			goto out;
		}
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s (%s)",
					 k > 0 ? ", " : "", methods[k][0], sig);
		if (used >= sizeof(list))
			used = sizeof(list) - 1;
	}
	ok(p, "hub.register asked for %s; answered Err(UnknownMethod)", list);
	rc = 0;
out:
	free(m);
	return rc;
}

/* Sends a Request with payload (the whole RequestPayload) and waits for its
 * Response, decoded into r. 0 or -1 (reported). */
static int
call_raw(struct peer *p, const char *what, uint64_t method, const uint8_t *payload,
	 size_t len, struct reply *r)
{
	uint64_t until = deadline_ms(CALL_MS);
	uint32_t id = p->next_req++;

	/* r[shm.id.request-id]: u32, never 0 */
	if (id == 0)
		id = p->next_req++;
	if (send_msg(p, HP_MSG_REQUEST, id, method, payload, (uint32_t)len, what) != 0)
		return -1;
	if (next_msg(p, &r->m, until, what) < 0)
		return -1;
	if (r->m.d.msg_type != HP_MSG_RESPONSE || r->m.d.id != id)
		return fail(p, what, "a %s (id %u) came instead of the response to %u",
			    type_name(r->m.d.msg_type), r->m.d.id, id);
	memset(&r->r, 0, sizeof(r->r));
	r->r.meta.entries = r->meta;
	r->r.meta.cap = sizeof(r->meta) / sizeof(r->meta[0]);
	if (hp_msg_decode_response(r->m.buf, r->m.len, &r->r) != 0)
		return fail(p, what, "the response does not decode (shm.metadata.in-payload)");
	return 0;
}

/* A call of method name with postcard arguments (no metadata). */
static int
call(struct peer *p, const char *what, const char *method, const uint8_t *args,
     size_t len, struct reply *r)
{
	uint8_t buf[MAX_PAYLOAD];
	int64_t n = hp_msg_encode_request(buf, sizeof(buf), NULL, args, len);

	if (n < 0)
		return fail(p, what, "the arguments do not fit in a request");
	return call_raw(p, what, hp_method_id(method, strlen(method)), buf, (size_t)n, r);
}

/* What an answer was, for failure lines. */
static const char *
describe(const struct hp_response *r)
{
	static char buf[160];
	struct hp_pc_dec d;
	const char *s;
	size_t n;

	if (r->result == HP_RESULT_OK) {
		snprintf(buf, sizeof(buf), "Ok(%zu bytes)", r->value_len);
		return buf;
	}
	switch (r->error) {
	case HP_ERR_USER:
		hp_pc_dec_init(&d, r->value, r->value_len);
		if (hp_pc_get_str(&d, &s, &n) == 0)
			snprintf(buf, sizeof(buf), "Err(User(\"%.*s\"))", (int)(n > 80 ? 80 : n), s);
		else
			snprintf(buf, sizeof(buf), "Err(User(%zu bytes))", r->value_len);
		return buf;
	case HP_ERR_UNKNOWN_METHOD:	return "Err(UnknownMethod)";
	case HP_ERR_INVALID_PAYLOAD:	return "Err(InvalidPayload)";
	case HP_ERR_CANCELLED:		return "Err(Cancelled)";
	}
	snprintf(buf, sizeof(buf), "Err(variant %u)", r->error);
	return buf;
}

/* Ok(value) with exactly these postcard bytes. */
static int
expect_ok(struct peer *p, const char *what, const struct reply *r,
	  const void *value, size_t len)
{
	if (r->r.result != HP_RESULT_OK || r->r.value_len != len ||
	    (len > 0 && memcmp(r->r.value, value, len) != 0))
		return fail(p, what, "answered %s, expected Ok(%zu bytes)", describe(&r->r), len);
	return 0;
}

static int
expect_err(struct peer *p, const char *what, const struct reply *r, uint32_t error)
{
	struct hp_response want = { .result = HP_RESULT_ERR, .error = error };

	if (r->r.result != HP_RESULT_ERR || r->r.error != error) {
		char got[160];

		snprintf(got, sizeof(got), "%s", describe(&r->r));
		return fail(p, what, "answered %s, expected %s", got, describe(&want));
	}
	return 0;
}

static size_t
enc_str(uint8_t *buf, size_t cap, const char *s, size_t n)
{
	struct hp_pc_enc e;

	hp_pc_enc_init(&e, buf, cap);
	hp_pc_put_str(&e, s, n);
	return e.err != 0 ? 0 : e.len;
}

/* -- spawning ------------------------------------------------------------ */

/* r[shm.spawn.ticket]: entry Reserved, doorbell pair, guest started with
 * the ticket on its command line. */
static int
spawn(struct peer *p)
{
	char a_path[PATH_MAX + 16], a_peer[32], a_fd[32];
	uint32_t seen;
	pid_t parent = getpid();
	int fds[2];

	p->e = peer_entry(p->id);
	p->chans = (struct hp_chan_entry *)(void *)(base + chan_offset(p->id));
	hp_slot_pool_view(&p->pool, base + pool_offset(p->id), SLOTS, SLOT_SIZE);
	if (hp_ring_init_producer(&p->tx, &p->e->h2g_head, &p->e->h2g_tail,
				  (struct hp_desc *)(void *)(base + ring_offset(p->id) +
							     L.ring_bytes / 2),
				  RING_SIZE) != 0 ||
	    hp_ring_init_consumer(&p->rx, &p->e->g2h_head, &p->e->g2h_tail,
				  (struct hp_desc *)(void *)(base + ring_offset(p->id)),
				  RING_SIZE) != 0)
		return fail(p, "spawn", "cannot set up its rings");
	p->next_req = 1;
	/* r[shm.doorbell.socketpair]: fds[0] ours (close-on-exec), fds[1]
	 * the guest's, inheritable (r[shm.spawn.fd-inheritance]) */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0)
		return fail(p, "spawn", "socketpair: %s", strerror(errno));
	if (fcntl(fds[0], F_SETFD, FD_CLOEXEC) != 0) {
		close(fds[0]);
		close(fds[1]);
		return fail(p, "spawn", "fcntl: %s", strerror(errno));
	}
	p->bell = fds[0];
	/* r[shm.spawn.reserved-state]: Empty -> Reserved; the guest's CAS
	 * to Attached acquires what we set up */
	if (hp_peer_reserve(p->e, &seen) != 0) {
		close(fds[1]);
		return fail(p, "spawn", "its entry is not Empty (state %u)", seen);
	}
	p->epoch0 = hp_peer_epoch(p->e);
	/* r[shm.spawn.args] */
	snprintf(a_path, sizeof(a_path), "--hub-path=%s", seg_path);
	snprintf(a_peer, sizeof(a_peer), "--peer-id=%u", p->id);
	snprintf(a_fd, sizeof(a_fd), "--doorbell-fd=%d", fds[1]);
	fflush(stdout);
	p->pid = fork();
	if (p->pid == 0) {
		char *argv[] = { p->bin, a_path, a_peer, a_fd, NULL };

		/* a host that dies takes its guests along */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		execv(p->bin, argv);
		_exit(127);
	}
	close(fds[1]);	/* the guest's end is the guest's alone */
	if (p->pid < 0) {
		p->pid = 0;
		p->gone = 1;
		/* spawn failed: Reserved -> Empty again */
		hp_peer_unreserve(p->e);
		return fail(p, "spawn", "fork: %s", strerror(errno));
	}
	kids[p->id - 1] = p->pid;
	return 0;
}

/* Waits until p is Attached with its epoch moved (r[shm.guest.attach]). */
static int
wait_attached(struct peer *p)
{
	uint64_t until = deadline_ms(ATTACH_MS);
	int status = 0;

	for (;;) {
		/* acquire: pairs with the guest's CAS to Attached and its
		 * release increment of the epoch */
		uint32_t state = hp_peer_state(p->e);
		uint32_t epoch = hp_peer_epoch(p->e);

		if (state == HP_PEER_ATTACHED && epoch != p->epoch0) {
			p->attached = 1;
			ok(p, "attached as peer %u (epoch %u)", p->id, epoch);
			return 0;
		}
		if (reaped(p, &status)) {
			p->gone = 1;
			hp_peer_unreserve(p->e);
			return fail(p, "attach", "the guest exited first (%s)", status_text(status));
		}
		if (now_ns() >= until) {
			/* never attached: it gets no goodbye, its entry is
			 * Empty again (r[shm.spawn.reserved-state]) */
			p->gone = 1;
			kill(p->pid, SIGKILL);
			waitpid(p->pid, NULL, 0);
			kids[p->id - 1] = 0;
			p->pid = 0;
			hp_peer_unreserve(p->e);
			return fail(p, "attach", "state %u, epoch %u after %d ms: killed", state,
				    epoch, ATTACH_MS);
		}
		serve_others(p);
		/* the guest rings once it is attached */
		hp_doorbell_wait(p->bell, NAP_MS);
	}
}

/* -- checks every guest gets ------------------------------------------- */

/* Spec errors: an unknown method id, and (method not NULL) a payload that
 * is not a request and arguments that do not decode as the method's. */
static void
check_errors(struct peer *p, const char *method, const uint8_t *bad_args, size_t bad_len)
{
	static const char unknown[] = "spechost.no-such-method";
	static const uint8_t not_a_request[] = { 0x01 };	/* one metadata entry, none there */
	uint8_t buf[64];
	struct reply *r = malloc(sizeof(*r));
	int64_t n;

	if (r == NULL)
		return;
	if (call(p, "unknown method", unknown, NULL, 0, r) == 0 &&
	    expect_err(p, "unknown method", r, HP_ERR_UNKNOWN_METHOD) == 0)
		ok(p, "an unknown method id is answered Err(UnknownMethod)");
	if (method == NULL)
		goto out;	/* a guest we know no method of */
	if (call_raw(p, "undecodable request", hp_method_id(method, strlen(method)),
		     not_a_request, sizeof(not_a_request), r) == 0 &&
	    expect_err(p, "undecodable request", r, HP_ERR_INVALID_PAYLOAD) == 0)
		ok(p, "%s with a payload that is no request: Err(InvalidPayload)", method);
	n = hp_msg_encode_request(buf, sizeof(buf), NULL, bad_args, bad_len);
	if (n > 0 && call_raw(p, "undecodable arguments", hp_method_id(method, strlen(method)),
			      buf, (size_t)n, r) == 0 &&
	    expect_err(p, "undecodable arguments", r, HP_ERR_INVALID_PAYLOAD) == 0)
		ok(p, "%s with arguments that do not decode: Err(InvalidPayload)", method);
out:
	free(r);
}

/* -- echo ------------------------------------------------------------------ */

static void
check_echo(struct peer *p)
{
	static const char hi[] = "hello", word[] = "h\xc3\xa9llo, w\xc3\xb6rld";
	static const char drow[] = "dlr\xc3\xb6w ,oll\xc3\xa9h";
	enum { BIG = 3000, INFLIGHT = 10 };
	struct reply *r = malloc(sizeof(*r));
	uint8_t *args = malloc(BIG + 16), want[64];
	char *big = malloc(BIG);
	size_t n, wn;

	if (r == NULL || args == NULL || big == NULL)
		goto out;
	n = enc_str(args, BIG + 16, hi, strlen(hi));
	if (call(p, "echo.echo(\"hello\")", "echo.echo", args, n, r) == 0 &&
	    expect_ok(p, "echo.echo(\"hello\")", r, args, n) == 0)
		ok(p, "echo.echo(\"hello\") == \"hello\" (inline both ways)");

	for (size_t i = 0; i < BIG; i++)
		big[i] = (char)('a' + (i * 7) % 26);
	n = enc_str(args, BIG + 16, big, BIG);
	if (call(p, "echo.echo of 3000 bytes", "echo.echo", args, n, r) == 0 &&
	    expect_ok(p, "echo.echo of 3000 bytes", r, args, n) == 0) {
		if (!r->m.slot)
			fail(p, "echo.echo of 3000 bytes", "the answer came inline");
		else
			ok(p, "echo.echo of 3000 bytes == the same (host slot out, guest slot back)");
	}

	n = enc_str(args, BIG + 16, word, strlen(word));
	wn = enc_str(want, sizeof(want), drow, strlen(drow));
	if (call(p, "echo.reverse", "echo.reverse", args, n, r) == 0 &&
	    expect_ok(p, "echo.reverse", r, want, wn) == 0)
		ok(p, "echo.reverse(\"%s\") == \"%s\"", word, drow);

	/* several calls in flight: each answered once, by its request id */
	{
		uint64_t id = hp_method_id("echo.echo", 9), until = deadline_ms(CALL_MS);
		uint8_t req[INFLIGHT][32], seen[INFLIGHT] = { 0 };
		size_t rlen[INFLIGHT];
		uint32_t first = p->next_req, got = 0;
		char s[16];
		int bad = 0;

		for (int i = 0; i < INFLIGHT && !bad; i++) {
			uint8_t a[24];
			size_t an;

			snprintf(s, sizeof(s), "call %d", i);
			an = enc_str(a, sizeof(a), s, strlen(s));
			rlen[i] = (size_t)hp_msg_encode_request(req[i], sizeof(req[i]), NULL, a, an);
			bad = send_msg(p, HP_MSG_REQUEST, first + (uint32_t)i, id, req[i],
				       (uint32_t)rlen[i], "calls in flight") != 0;
		}
		p->next_req = first + INFLIGHT;
		while (!bad && got < INFLIGHT) {
			uint32_t k;

			if (next_msg(p, &r->m, until, "calls in flight") < 0) {
				bad = 1;
				break;
			}
			k = r->m.d.id - first;
			if (r->m.d.msg_type != HP_MSG_RESPONSE || k >= INFLIGHT || seen[k]) {
				bad = fail(p, "calls in flight", "an unexpected %s (id %u)",
					   type_name(r->m.d.msg_type), r->m.d.id);
				break;
			}
			seen[k] = 1;
			got++;
			/* Ok(str) = metadata, Ok tag, then the argument as sent */
			if (r->m.len != rlen[k] + 1 ||
			    memcmp(r->m.buf + 2, req[k] + 1, rlen[k] - 1) != 0)
				bad = fail(p, "calls in flight", "the answer to %u is not its echo",
					   r->m.d.id);
		}
		if (!bad)
			ok(p, "%d echo.echo calls in flight, each answered once by its id", INFLIGHT);
	}
	/* a str that does not decode: its length says 5, one byte follows */
	check_errors(p, "echo.echo", (const uint8_t *)"\x05" "a", 2);
out:
	free(r);
	free(args);
	free(big);
}

/* -- kv -------------------------------------------------------------------- */

/* args for kv.put: str key, bytes value */
static size_t
kv_put_args(uint8_t *buf, size_t cap, const char *key, const uint8_t *v, size_t vn)
{
	struct hp_pc_enc e;

	hp_pc_enc_init(&e, buf, cap);
	hp_pc_put_str(&e, key, strlen(key));
	hp_pc_put_bytes(&e, v, vn);
	return e.err != 0 ? 0 : e.len;
}

/* kv.list's answer, as a set of lines */
static int
kv_list_is(const struct reply *r, const char *const *keys, size_t nkeys)
{
	struct hp_pc_dec d;
	const char *s;
	size_t n, lines = 0;

	if (r->r.result != HP_RESULT_OK)
		return 0;
	hp_pc_dec_init(&d, r->r.value, r->r.value_len);
	if (hp_pc_get_str(&d, &s, &n) != 0 || hp_pc_remaining(&d) != 0)
		return 0;
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(s + i, '\n', n - i);
		size_t len, k;

		if (nl == NULL)
			return 0;
		len = (size_t)(nl - (s + i));
		for (k = 0; k < nkeys; k++)
			if (strlen(keys[k]) == len && memcmp(keys[k], s + i, len) == 0)
				break;
		if (k == nkeys)
			return 0;
		lines++;
		i += len + 1;
	}
	return lines == nkeys;
}

static void
check_kv(struct peer *p)
{
	enum { VLEN = 300 };
	static const char *const both[] = { "k", "k2" }, *const one[] = { "k2" };
	struct reply *r = malloc(sizeof(*r));
	uint8_t val[VLEN], args[VLEN + 32], want[VLEN + 8], key[8];
	size_t n, wn, kn;

	if (r == NULL)
		return;
	for (size_t i = 0; i < VLEN; i++)
		val[i] = (uint8_t)(255 - i * 13);	/* not UTF-8: bytes are bytes */
	n = kv_put_args(args, sizeof(args), "k", val, VLEN);
	if (call(p, "kv.put", "kv.put", args, n, r) == 0 &&
	    expect_ok(p, "kv.put", r, NULL, 0) == 0)
		ok(p, "kv.put(\"k\", %d bytes) == Ok(())", VLEN);
	n = kv_put_args(args, sizeof(args), "k2", (const uint8_t *)"v", 1);
	if (call(p, "kv.put k2", "kv.put", args, n, r) == 0 &&
	    expect_ok(p, "kv.put k2", r, NULL, 0) == 0)
		ok(p, "kv.put(\"k2\", \"v\") == Ok(())");

	kn = enc_str(key, sizeof(key), "k", 1);
	{
		struct hp_pc_enc e;

		hp_pc_enc_init(&e, want, sizeof(want));
		hp_pc_put_bytes(&e, val, VLEN);
		wn = e.len;
	}
	if (call(p, "kv.get", "kv.get", key, kn, r) == 0 &&
	    expect_ok(p, "kv.get", r, want, wn) == 0)
		ok(p, "kv.get(\"k\") == the %d bytes put", VLEN);

	if (call(p, "kv.list", "kv.list", NULL, 0, r) == 0) {
		if (kv_list_is(r, both, 2))
			ok(p, "kv.list == {k, k2}");
		else
			fail(p, "kv.list", "answered %s, not the lines k and k2", describe(&r->r));
	}
	if (call(p, "kv.delete", "kv.delete", key, kn, r) == 0 &&
	    expect_ok(p, "kv.delete", r, NULL, 0) == 0)
		ok(p, "kv.delete(\"k\") == Ok(())");
	if (call(p, "kv.get missing", "kv.get", key, kn, r) == 0 &&
	    expect_err(p, "kv.get missing", r, HP_ERR_USER) == 0)
		ok(p, "kv.get(\"k\") after its delete: %s", describe(&r->r));
	if (call(p, "kv.list after delete", "kv.list", NULL, 0, r) == 0) {
		if (kv_list_is(r, one, 1))
			ok(p, "kv.list == {k2} after the delete");
		else
			fail(p, "kv.list after delete", "answered %s, not the line k2",
			     describe(&r->r));
	}
	free(r);
	/* a key that is no str: invalid UTF-8 */
	check_errors(p, "kv.get", (const uint8_t *)"\x02\xff\xfe", 3);
}

/* -- counter --------------------------------------------------------------- */

/* r[shm.flow.channel-activate]: a Free even id of p's table (the host's,
 * r[shm.id.channel-parity]), credit first, then Active with release. */
static int64_t
chan_open(struct peer *p)
{
	for (uint32_t id = 2; id < MAX_CHANNELS; id += 2) {
		struct hp_chan_entry *c = &p->chans[id];

		/* acquire: pairs with the receiver's release store of Free */
		if (hp_load_acquire_u32(&c->state) != HP_CHAN_FREE)
			continue;
		hp_store_relaxed_u32(&c->granted_total, INITIAL_CREDIT);
		hp_store_release_u32(&c->state, HP_CHAN_ACTIVE);
		return id;
	}
	return -1;
}

/* Bytes of v as a postcard u64. */
static uint32_t
varint_len(uint64_t v)
{
	uint32_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* counter.count(n, chan): the items 1..n on chan, with credit granted as
 * it runs out, then Close, then Ok(n). */
static void
count_stream(struct peer *p, uint64_t n, int64_t want_chan)
{
	const char *what = n > 100 ? "counter.count stream" : "counter.count again";
	uint64_t until = deadline_ms(STREAM_MS), next = 1, bytes = 0, grants = 0;
	struct reply *r = malloc(sizeof(*r));
	uint32_t req, granted = INITIAL_CREDIT;
	uint8_t args[32], pl[MAX_PAYLOAD];
	struct hp_pc_enc e;
	int64_t chan, n_pl;
	int closed = 0, answered = 0;

	if (r == NULL)
		return;
	if ((chan = chan_open(p)) < 0) {
		fail(p, what, "no Free even channel id in its table");
		goto out;
	}
	if (want_chan > 0 && chan != want_chan) {
		fail(p, what, "channel %" PRId64 " was not Free again after its Close",
		     want_chan);
		goto out;
	}
	hp_pc_enc_init(&e, args, sizeof(args));
	hp_pc_put_u64(&e, n);
	hp_pc_put_u64(&e, (uint64_t)chan);	/* chan<u64>: its id */
	n_pl = hp_msg_encode_request(pl, sizeof(pl), NULL, args, e.len);
	req = p->next_req++;
	if (send_msg(p, HP_MSG_REQUEST, req, hp_method_id("counter.count", 13), pl,
		     (uint32_t)n_pl, what) != 0)
		goto out;
	while (!closed || !answered) {
		struct hp_pc_dec d;
		uint64_t item;

		if (next_msg(p, &r->m, until, what) < 0)
			goto out;
		if (r->m.d.msg_type == HP_MSG_DATA && r->m.d.id == chan && !closed) {
			hp_pc_dec_init(&d, r->m.buf, r->m.len);
			item = hp_pc_get_u64(&d);
			if (d.err != 0 || hp_pc_remaining(&d) != 0 || item != next) {
				fail(p, what, "item %" PRIu64 " is not a u64 %" PRIu64, next, next);
				goto out;
			}
			next++;
			/* r[shm.bytes.what-counts]: payload_len */
			bytes += r->m.len;
			/* r[shm.flow.remaining-credit]: never past what we granted */
			if ((int32_t)(granted - (uint32_t)bytes) < 0) {
				fail(p, what, "%" PRIu64 " bytes sent, %u granted", bytes, granted);
				goto out;
			}
			/* Grant only once what is left cannot carry the next
			 * item (next's varint): the sender has run out and
			 * must wait for us (r[shm.flow.zero-credit]). */
			if (next <= n && granted - (uint32_t)bytes < varint_len(next)) {
				/* a quarter window: it runs out a few times */
				granted += INITIAL_CREDIT / 4;
				/* r[shm.flow.ordering.receiver]: release */
				hp_store_release_u32(&p->chans[chan].granted_total, granted);
				/* r[shm.wakeup.credit-wait] */
				hp_futex_wake(&p->chans[chan].granted_total, INT_MAX);
				grants++;
			}
		} else if ((r->m.d.msg_type == HP_MSG_CLOSE || r->m.d.msg_type == HP_MSG_RESET) &&
			   r->m.d.id == chan && !closed) {
			if (r->m.d.msg_type == HP_MSG_RESET) {
				fail(p, what, "the guest reset the channel after %" PRIu64 " items",
				     next - 1);
				goto out;
			}
			closed = 1;
			/* r[shm.flow.channel-id-reuse] 2: the receiver frees it */
			hp_store_release_u32(&p->chans[chan].state, HP_CHAN_FREE);
		} else if (r->m.d.msg_type == HP_MSG_RESPONSE && r->m.d.id == req && !answered) {
			uint8_t want[16];
			struct hp_pc_enc we;

			answered = 1;
			memset(&r->r, 0, sizeof(r->r));
			r->r.meta.entries = r->meta;
			r->r.meta.cap = sizeof(r->meta) / sizeof(r->meta[0]);
			if (hp_msg_decode_response(r->m.buf, r->m.len, &r->r) != 0) {
				fail(p, what, "the response does not decode");
				goto out;
			}
			hp_pc_enc_init(&we, want, sizeof(want));
			hp_pc_put_u64(&we, n);
			if (expect_ok(p, what, r, want, we.len) != 0)
				goto out;
			if (!closed) {
				fail(p, what, "the answer came before the channel's Close");
				goto out;
			}
		} else {
			fail(p, what, "an unexpected %s (id %u)", type_name(r->m.d.msg_type),
			     r->m.d.id);
			goto out;
		}
	}
	if (next - 1 != n) {
		fail(p, what, "%" PRIu64 " items of %" PRIu64, next - 1, n);
		goto out;
	}
	if (n > 100 && (grants == 0 || bytes <= INITIAL_CREDIT)) {
		fail(p, what, "%" PRIu64 " bytes, %" PRIu64 " grants: credit never ran out",
		     bytes, grants);
		goto out;
	}
	if (n > 100)
		ok(p, "counter.count(%" PRIu64 ", chan %" PRId64 "): items 1..%" PRIu64
		   " (%" PRIu64 " bytes; credit ran out %" PRIu64
		   " times, granted more each time), Close, Ok(%" PRIu64 ")", n, chan, n, bytes, grants, n);
	else
		ok(p, "counter.count(%" PRIu64 ", chan %" PRId64 ") on the id freed "
		   "after its Close: items 1..%" PRIu64 ", Close, Ok(%" PRIu64 ")",
		   n, chan, n, n);
out:
	free(r);
}

static void
check_counter(struct peer *p)
{
	count_stream(p, COUNT_N, 0);
	/* the id again once Free (r[shm.flow.channel-id-reuse]) */
	count_stream(p, 5, 2);
	/* the count is no u64: a varint cut short */
	check_errors(p, "counter.count", (const uint8_t *)"\x80", 1);
}

/* -- idle, heartbeat, pools, goodbye ------------------------------------- */

/* r[shm.crash.heartbeat]: while every guest idles for ~3 intervals, each
 * one's last_heartbeat stays within 2 intervals of our clock and moves. */
static void
check_heartbeats(void)
{
	uint64_t first[MAX_GUESTS], oldest[MAX_GUESTS] = { 0 }, until;
	int stale[MAX_GUESTS] = { 0 };

	for (uint32_t i = 0; i < npeers; i++)
		first[i] = hp_peer_heartbeat(peers[i].e);
	until = now_ns() + 3 * HEARTBEAT_NS + HEARTBEAT_NS / 2;
	while (now_ns() < until) {
		serve_others(NULL);
		for (uint32_t i = 0; i < npeers; i++) {
			struct peer *p = &peers[i];
			uint64_t now, beat;
			int64_t age;

			if (!p->attached || p->gone)
				continue;
			beat = hp_peer_heartbeat(p->e);
			now = now_ns();
			age = (int64_t)(now - beat);
			if (age > 0 && (uint64_t)age > oldest[i])
				oldest[i] = (uint64_t)age;
			if (age > 0 && (uint64_t)age > 2 * HEARTBEAT_NS)
				stale[i] = 1;
		}
		usleep(NAP_MS * 1000);
	}
	for (uint32_t i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];
		uint64_t last = hp_peer_heartbeat(p->e);

		if (!p->attached || p->gone)
			continue;
		if (stale[i])
			fail(p, "heartbeat", "%" PRIu64 " ms old at worst, interval %llu ms",
			     oldest[i] / NS_PER_MS, HEARTBEAT_NS / NS_PER_MS);
		else if (last == first[i])
			fail(p, "heartbeat", "last_heartbeat did not move in %llu ms idle",
			     (3 * HEARTBEAT_NS + HEARTBEAT_NS / 2) / NS_PER_MS);
		else
			ok(p, "heartbeat kept while idle (%" PRIu64 " ms old at worst, "
			   "interval %llu ms)", oldest[i] / NS_PER_MS, HEARTBEAT_NS / NS_PER_MS);
	}
}

/* Idle: every slot the guests were sent is back in the host's pool, every
 * slot they sent back in theirs. */
static void
check_pools(void)
{
	uint32_t n = hp_slot_count_free(&host_pool);

	for (uint32_t i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];
		uint32_t g = hp_slot_count_free(&p->pool);

		if (!p->attached || p->gone)
			continue;
		if (g != SLOTS)
			fail(p, "its slot pool", "%u of %u slots free while idle", g, SLOTS);
		else
			ok(p, "its slot pool: all %u slots free while idle", SLOTS);
	}
	if (n != SLOTS)
		fail(NULL, "the host's slot pool", "%u of %u slots free: the guests kept some",
		     n, SLOTS);
	else
		ok(NULL, "the host's slot pool: all %u slots back", SLOTS);
}

/* r[shm.goodbye.host]: host_goodbye set, every guest woken; each must set
 * Goodbye (r[shm.goodbye.guest]) and exit 0. */
static void
check_goodbye(void)
{
	uint64_t until;
	int status;

	/* r[shm.goodbye.host-atomic]: relaxed is enough, it publishes
	 * nothing else */
	hp_store_relaxed_u32(&hdr->host_goodbye, 1);
	for (uint32_t i = 0; i < npeers; i++) {
		if (peers[i].pid <= 0)
			continue;
		hp_peer_wake(peers[i].e);
		hp_doorbell_signal(peers[i].bell);
	}
	until = deadline_ms(GOODBYE_MS);
	for (uint32_t i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];
		uint32_t state;

		if (p->pid <= 0)
			continue;
		while (!reaped(p, &status) && now_ns() < until)
			usleep(NAP_MS * 1000);
		p->gone = 1;
		if (p->pid > 0) {
			kill(p->pid, SIGKILL);
			waitpid(p->pid, NULL, 0);
			kids[p->id - 1] = 0;
			p->pid = 0;
			fail(p, "goodbye", "still running %d ms after host_goodbye: killed",
			     GOODBYE_MS);
			continue;
		}
		/* acquire: pairs with the guest's release store of Goodbye */
		state = hp_peer_state(p->e);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail(p, "goodbye", "the guest ended with %s", status_text(status));
		else if (state != HP_PEER_GOODBYE)
			fail(p, "goodbye", "exited 0 but left state %u, not Goodbye", state);
		else
			ok(p, "host_goodbye: state Goodbye, exit status 0");
	}
}

/* -- main ------------------------------------------------------------------ */

/* The example guests: what each registers (guestlib/examples/) and checks. */
static const struct kind {
	const char	*name;
	const char	*methods[5][2];
	void		(*check)(struct peer *);
} kinds[] = {
	{ "echo", { { "echo.echo", "str->str" }, { "echo.reverse", "str->str" } },
	  check_echo },
	{ "kv", { { "kv.put", "str,bytes->unit" }, { "kv.get", "str->bytes" },
		  { "kv.delete", "str->unit" }, { "kv.list", "->str" } }, check_kv },
	{ "counter", { { "counter.count", "u64,chan<u64>->u64" },
		       { "counter.stream", "u64,u64->str" } }, check_counter },
};

static const char *
base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s != NULL ? s + 1 : path;
}

static void
usage(void)
{
	fprintf(stderr, "usage: spechost [--create-only] SEGMENT_PATH GUEST_BINARY...\n"
		"  at most %u guests\n", MAX_GUESTS);
	exit(2);
}

int
main(int argc, char *argv[])
{
	struct sigaction sa;
	int create_only = 0, i = 1;

	if (i < argc && strcmp(argv[i], "--create-only") == 0) {
		create_only = 1;
		i++;
	}
	if (i >= argc || (!create_only && i + 1 >= argc) || (create_only && i + 1 != argc) ||
	    argc - i - 1 > (int)MAX_GUESTS)
		usage();
	seg_path = argv[i++];
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* a write to a dead guest's doorbell fails, it does not kill us */
	signal(SIGPIPE, SIG_IGN);

	if (segment_create(seg_path) != 0) {
		cleanup();
		return 1;
	}
	if (create_only)
		return 0;	/* left for the caller, who removes it */
	ok(NULL, "segment created (%" PRIu64 " bytes, peer table last at %" PRIu64 ")",
	   L.total, L.peer_table);

	for (; i < argc; i++) {
		struct peer *p = &peers[npeers];

		p->bin = argv[i];
		p->id = ++npeers;
		p->bell = -1;
		snprintf(p->name, sizeof(p->name), "%s", base_name(p->bin));
		for (uint32_t k = 0; k + 1 < npeers; k++)
			if (strcmp(peers[k].name, p->name) == 0)
				snprintf(p->name, sizeof(p->name), "%s#%u", base_name(p->bin), p->id);
	}
	/* all of them up at once: they share the host's pool */
	for (uint32_t k = 0; k < npeers; k++)
		spawn(&peers[k]);
	for (uint32_t k = 0; k < npeers; k++)
		if (!peers[k].gone && peers[k].pid > 0)
			wait_attached(&peers[k]);

	for (uint32_t k = 0; k < npeers; k++) {
		struct peer *p = &peers[k];
		const struct kind *kd = NULL;

		if (!p->attached || p->gone)
			continue;
		for (size_t j = 0; j < sizeof(kinds) / sizeof(kinds[0]); j++)
			if (strcmp(base_name(p->bin), kinds[j].name) == 0)
				kd = &kinds[j];
		if (kd == NULL)
			check_errors(p, NULL, NULL, 0);
		else if (wait_registered(p, kd->methods) == 0)
			kd->check(p);
	}
	check_heartbeats();
	check_pools();
	check_goodbye();
	cleanup();
	if (failures != 0)
		printf("# %d check(s) failed\n", failures);
	return failures == 0 ? 0 : 1;
}
