/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Topics (topic.h): the sealed memory and cursors, the seqlock writer
 * with its policies and wakes, the bounded reader, HP_MSG_TOPIC. Over
 * 600 lines and whole: the writer and the reader of one protocol, each
 * one's orderings next to its partner's. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/clock.h"
#include "proto/doorbell.h"
#include "proto/postcard.h"
#include "proto/topic.h"

_Static_assert(sizeof(struct hp_topic_hdr) == 3 * HP_CACHE_LINE, "header: three lines");
_Static_assert(offsetof(struct hp_topic_hdr, claim) == HP_CACHE_LINE, "claim: line 1");
_Static_assert(offsetof(struct hp_topic_hdr, writer_waiting) == 2 * HP_CACHE_LINE,
	       "writer_waiting: line 2");
_Static_assert(sizeof(struct hp_topic_slot) == 16, "slot head: 16 bytes, data 8-aligned");
_Static_assert(sizeof(struct hp_topic_cursor) == 32, "cursor");

#define SEALS		(F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
/* Tries a reader makes in one call (laps, versions that moved): a
 * hostile writer makes it return, never spin. */
#define READ_TRIES	4
/* Lost claim races before a writer takes its sequence by fetch-add, and
 * spins it waits for an older writer still in a slot. */
#define CLAIM_TRIES	64
#define SLOT_SPINS	4096
#define SLOT_YIELDS	16

static const char *const policy_names[HP_TOPIC_POLICIES] = {
	"block", "drop-oldest", "latest"
};

const char *
hp_topic_policy_name(uint32_t policy)
{
	return policy < HP_TOPIC_POLICIES ? policy_names[policy] : "?";
}

int
hp_topic_policy_parse(const char *s)
{
	for (uint32_t i = 0; i < HP_TOPIC_POLICIES; i++)
		if (strcmp(s, policy_names[i]) == 0)
			return (int)i;
	return -1;
}

static int
fail(const char **why, const char *msg, int rc)
{
	if (why != NULL)
		*why = msg;
	return rc;
}

int
hp_topic_sig_parse(const char *text, struct hp_sig *sig, const char **why)
{
	char full[HP_SIG_MAX_LEN + 8];

	if (strstr(text, "->") != NULL)
		return fail(why, "an event has no result: give its arguments only", -EINVAL);
	if ((size_t)snprintf(full, sizeof(full), "%s->unit", text) > HP_SIG_MAX_LEN)
		return fail(why, "signature too long", -EINVAL);
	if (hp_sig_parse(full, sig, why) != 0)
		return -EINVAL;
	if (hp_sig_takes_chan(sig))
		return fail(why, "an event carries no channel (chan<T>, rx<T>)", -EINVAL);
	return 0;
}

size_t
hp_topic_slot_size(const struct hp_topic_geom *g)
{
	return (sizeof(struct hp_topic_slot) + (size_t)g->event_max + HP_CACHE_LINE - 1) /
	    HP_CACHE_LINE * HP_CACHE_LINE;
}

size_t
hp_topic_size(const struct hp_topic_geom *g)
{
	return sizeof(struct hp_topic_hdr) + (size_t)g->slots * hp_topic_slot_size(g);
}

int
hp_topic_geom_check(const struct hp_topic_geom *g, const char **why)
{
	/* sequences map to slots with a mask */
	if (g->slots < HP_TOPIC_SLOTS_MIN || g->slots > HP_TOPIC_SLOTS_MAX ||
	    (g->slots & (g->slots - 1)) != 0)
		return fail(why, "slots must be a power of two from 2 to 65536", -EINVAL);
	if (g->event_max < HP_TOPIC_EVENT_MIN || g->event_max > HP_TOPIC_EVENT_MAX)
		return fail(why, "event_max must be 8 bytes to 1 MiB", -EINVAL);
	/* both below 2^21: no overflow */
	if ((uint64_t)hp_topic_size(g) > HP_TOPIC_SIZE_MAX)
		return fail(why, "slots * event_max: the topic would be over 256 MiB", -EINVAL);
	return 0;
}

static size_t
page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* A sealed memfd of size bytes, mode 0400: a party handed a read-only
 * descriptor cannot reopen it writable through /proc (unless root). */
static int
memfd(const char *name, size_t size, int *fd, const char **why)
{
	int f, rc;

	if ((f = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING)) < 0)
		return fail(why, "memfd_create", -errno);
	if (ftruncate(f, (off_t)size) != 0 || fcntl(f, F_ADD_SEALS, SEALS) != 0 ||
	    fchmod(f, 0400) != 0) {
		rc = -errno;
		close(f);
		return fail(why, "cannot size or seal the memfd", rc);
	}
	*fd = f;
	return 0;
}

/* fd is a sealed memfd of size bytes, mapped into *base. */
static int
map_checked(int fd, size_t size, int writable, void **base, const char **why)
{
	struct stat st;
	int seals;
	void *b;

	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size)
		return fail(why, "not a memory of the expected size", -EBADMSG);
	/* unsealed, a party could shrink it under the others (SIGBUS) */
	if ((seals = fcntl(fd, F_GET_SEALS)) < 0 || (seals & SEALS) != SEALS)
		return fail(why, "the memory is not sealed", -EBADMSG);
	b = mmap(NULL, size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	if (b == MAP_FAILED)
		return fail(why, "cannot map the memory", -errno);
	*base = b;
	return 0;
}

int
hp_topic_create(const char *name, const struct hp_topic_geom *g, int *fd, const char **why)
{
	struct hp_topic_hdr *h;
	void *base;
	int rc, f;

	if ((rc = hp_topic_geom_check(g, why)) != 0)
		return rc;
	/* fresh memory reads zero: claim 0, every slot version 0 (none
	 * written: sequence 0 wants 2) */
	if ((rc = memfd(name, hp_topic_size(g), &f, why)) != 0)
		return rc;
	if ((base = mmap(NULL, sizeof(*h), PROT_READ | PROT_WRITE, MAP_SHARED, f, 0)) ==
	    MAP_FAILED) {
		rc = -errno;
		close(f);
		return fail(why, "cannot map the topic", rc);
	}
	h = base;
	h->magic = HP_TOPIC_MAGIC;
	h->slots = g->slots;
	h->event_max = g->event_max;
	munmap(base, sizeof(*h));
	*fd = f;
	return 0;
}

int
hp_topic_cursor_create(const char *name, uint64_t start, int *fd, const char **why)
{
	struct hp_topic_cursor *c;
	void *base;
	int rc, f;

	if ((rc = memfd(name, page_size(), &f, why)) != 0)
		return rc;
	if ((base = mmap(NULL, page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, f, 0)) ==
	    MAP_FAILED) {
		rc = -errno;
		close(f);
		return fail(why, "cannot map the cursor", rc);
	}
	c = base;
	/* relaxed: nobody maps it yet; handing the fd over orders it */
	hp_store_relaxed_u64(&c->read, start);
	munmap(base, page_size());
	*fd = f;
	return 0;
}

int
hp_topic_reopen_ro(int fd)
{
	char path[64];
	int f;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if ((f = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	return f;
}

int
hp_topic_map(struct hp_topic_map *m, int fd, const struct hp_topic_geom *g, int writable,
	     const char **why)
{
	void *base;
	int rc;

	memset(m, 0, sizeof(*m));
	if ((rc = hp_topic_geom_check(g, why)) != 0)
		return rc;
	if ((rc = map_checked(fd, hp_topic_size(g), writable, &base, why)) != 0)
		return rc;
	m->base = base;
	m->size = hp_topic_size(g);
	m->geom = *g;
	m->writable = writable;
	return 0;
}

void
hp_topic_unmap(struct hp_topic_map *m)
{
	if (m->base != NULL)
		munmap(m->base, m->size);
	m->base = NULL;
}

int
hp_cursor_map(struct hp_cursor_map *m, int fd, int writable, const char **why)
{
	void *base;
	int rc;

	memset(m, 0, sizeof(*m));
	if ((rc = map_checked(fd, page_size(), writable, &base, why)) != 0)
		return rc;
	m->c = base;
	m->writable = writable;
	return 0;
}

void
hp_cursor_unmap(struct hp_cursor_map *m)
{
	if (m->c != NULL)
		munmap(m->c, page_size());
	m->c = NULL;
}

static struct hp_topic_hdr *
hdr(const struct hp_topic_map *m)
{
	return (struct hp_topic_hdr *)(void *)m->base;
}

/* Sequence s's slot: the geometry is hubd's, never the header's. */
static struct hp_topic_slot *
slot_of(const struct hp_topic_map *m, uint64_t s)
{
	return (struct hp_topic_slot *)(void *)(m->base + sizeof(struct hp_topic_hdr) +
	    (s & (m->geom.slots - 1)) * hp_topic_slot_size(&m->geom));
}

static hp_atomic_u64 *
slot_words(struct hp_topic_slot *sl)
{
	return (hp_atomic_u64 *)(void *)(sl + 1);
}

uint64_t
hp_topic_claimed(const struct hp_topic_map *m)
{
	/* acquire: pairs with a writer's claim */
	return hp_load_acquire_u64(&hdr(m)->claim);
}

/* -- writing --------------------------------------------------------------- */

void
hp_topic_writer_init(struct hp_topic_writer *w, const struct hp_topic_map *m)
{
	memset(w, 0, sizeof(*w));
	w->map = *m;
	/* its waits' numbers from the clock: the topic's memory, and its
	 * subscribers' last number rung, outlive a publisher that restarts,
	 * whose first wait must not look like one already rung for */
	w->waits = (uint32_t)hp_now_ns();
}

static void
sub_free(struct hp_topic_sub *s)
{
	hp_cursor_unmap(&s->cur);
	if (s->bell >= 0)
		close(s->bell);
	s->bell = -1;
}

void
hp_topic_writer_free(struct hp_topic_writer *w)
{
	for (uint32_t i = 0; i < w->nsubs; i++)
		sub_free(&w->subs[i]);
	free(w->subs);
	hp_topic_unmap(&w->map);
	memset(w, 0, sizeof(*w));
}

int
hp_topic_writer_add(struct hp_topic_writer *w, uint32_t id, uint32_t policy, int cursor_fd,
		    int bell, const char **why)
{
	struct hp_topic_sub *s;
	int rc;

	if (policy >= HP_TOPIC_POLICIES) {
		rc = fail(why, "no such policy", -EINVAL);
		goto fail;
	}
	for (uint32_t i = 0; i < w->nsubs; i++)
		if (w->subs[i].id == id) {
			rc = fail(why, "a subscriber of that id is there", -EEXIST);
			goto fail;
		}
	if (w->nsubs == w->cap) {
		uint32_t cap = w->cap == 0 ? 4 : w->cap * 2;

		if ((s = reallocarray(w->subs, cap, sizeof(*s))) == NULL) {
			rc = fail(why, "out of memory", -ENOMEM);
			goto fail;
		}
		w->subs = s;
		w->cap = cap;
	}
	s = &w->subs[w->nsubs];
	memset(s, 0, sizeof(*s));
	if ((rc = hp_cursor_map(&s->cur, cursor_fd, 0, why)) != 0)
		goto fail;
	close(cursor_fd);
	s->id = id;
	s->policy = policy;
	s->bell = bell;
	w->nsubs++;
	return 0;
fail:
	close(cursor_fd);
	if (bell >= 0)
		close(bell);
	return rc;
}

int
hp_topic_writer_remove(struct hp_topic_writer *w, uint32_t id)
{
	for (uint32_t i = 0; i < w->nsubs; i++) {
		if (w->subs[i].id != id)
			continue;
		sub_free(&w->subs[i]);
		memmove(&w->subs[i], &w->subs[i + 1], (w->nsubs - i - 1) * sizeof(w->subs[0]));
		w->nsubs--;
		return 0;
	}
	return -ENOENT;
}

/* The subscriber's position, never past h (its cursor is its own to
 * scribble). acquire: pairs with the release store in the reader's
 * commit, so its copy of a slot is over before the slot is written
 * again. */
static uint64_t
sub_read(const struct hp_topic_sub *s, uint64_t h)
{
	uint64_t r = hp_load_acquire_u64(&s->cur.c->read);

	return r > h ? h : r;
}

/* Whether sequence h may be written: every block subscriber not
 * overrun has read h - slots. mark: overrun those that have not. An
 * overrun one is waited for again once it is back within the ring. */
static int
room(struct hp_topic_writer *w, uint64_t h, int mark, uint32_t *blocker)
{
	uint64_t slots = w->map.geom.slots;

	for (uint32_t i = 0; i < w->nsubs; i++) {
		struct hp_topic_sub *s = &w->subs[i];
		uint64_t r;

		if (s->policy != HP_TOPIC_BLOCK)
			continue;
		r = sub_read(s, h);
		if (s->overrun && h - r < slots)
			s->overrun = 0;
		if (s->overrun || h - r < slots)
			continue;
		if (mark) {
			s->overrun = 1;
			w->overruns++;
			continue;
		}
		if (blocker != NULL)
			*blocker = i;
		return 0;
	}
	return 1;
}

/* Takes slot sl for sequence h: 1, or 0 when a later sequence holds it
 * already (this event is lapped before it is written). An older writer
 * still inside is waited for a little, then taken over (it died; one
 * only descheduled that long could still mix its bytes into ours, which
 * readers cannot tell: two writers a whole ring apart, drop-oldest). A
 * writer that died inside leaves its sequence unwritten, for hubd to
 * spoil (hp_topic_spoil_unwritten). */
static int
slot_take(struct hp_topic_slot *sl, uint64_t h)
{
	uint64_t want = 2 * h + 1, v = hp_load_relaxed_u64(&sl->ver);
	uint32_t spins = 0;

	for (int tries = 0; tries < CLAIM_TRIES; tries++) {
		if (v >= want)
			return 0;
		if ((v & 1) != 0 && spins < SLOT_SPINS + SLOT_YIELDS) {
			if (++spins > SLOT_SPINS)
				sched_yield();
			else
				hp_cpu_relax();
			v = hp_load_relaxed_u64(&sl->ver);
			tries--;
			continue;
		}
		/* acq_rel; the release fence after it keeps the data
		 * stores behind the odd version (pairs with the reader's
		 * acquire fence before its second version load) */
		if (hp_cas_u64(&sl->ver, &v, want)) {
			atomic_thread_fence(memory_order_release);
			return 1;
		}
	}
	return 0;
}

static void
ring_sleepers(struct hp_topic_writer *w)
{
	/* Dekker with hp_topic_reader_announce: the version is stored, so
	 * either the reader sees it or we see its sleeping */
	hp_fence_seq_cst();
	for (uint32_t i = 0; i < w->nsubs; i++) {
		struct hp_topic_sub *s = &w->subs[i];
		uint32_t gen;

		/* relaxed: ordered by the fences on both sides */
		if (hp_load_relaxed_u32(&s->cur.c->sleeping) == 0)
			continue;
		gen = hp_load_relaxed_u32(&s->cur.c->sleep_gen);
		if (gen == s->rung_gen || s->bell < 0 || s->hung)
			continue;
		s->rung_gen = gen;
		s->rings++;
		/* kept open until the subscriber is removed: whoever polls it
		 * (libguest's sleep) finds it hung up, not a reused number */
		if (hp_doorbell_signal(s->bell) == -EPIPE)
			s->hung = 1;
	}
}

int
hp_topic_publish(struct hp_topic_writer *w, const void *ev, size_t len, uint32_t *blocker)
{
	struct hp_topic_hdr *th = hdr(&w->map);
	const uint8_t *src = ev;
	struct hp_topic_slot *sl;
	hp_atomic_u64 *dst;
	uint64_t h, word;
	size_t i, n;
	int claimed = 0;

	if (len > w->map.geom.event_max)
		return -EMSGSIZE;
	/* acquire: pairs with another writer's claim (nothing more) */
	h = hp_load_acquire_u64(&th->claim);
	for (int tries = 0; tries < CLAIM_TRIES && !claimed; tries++) {
		if (!room(w, h, 0, blocker))
			return -EAGAIN;
		claimed = hp_cas_u64(&th->claim, &h, h + 1);
	}
	if (!claimed)
		h = hp_fetch_add_u64(&th->claim, 1, memory_order_acq_rel);
	sl = slot_of(&w->map, h);
	if (slot_take(sl, h)) {
		/* relaxed words: a reader copies them while we may write
		 * (the seqlock tells it so), never a plain race */
		hp_store_relaxed_u32(&sl->len, (uint32_t)len);
		dst = slot_words(sl);
		for (i = 0, n = len / 8; i < n; i++) {
			memcpy(&word, src + 8 * i, 8);
			hp_store_relaxed_u64(&dst[i], word);
		}
		if (len % 8 != 0) {
			word = 0;
			memcpy(&word, src + 8 * n, len % 8);
			hp_store_relaxed_u64(&dst[n], word);
		}
		/* release: pairs with the reader's acquire load of the
		 * version; fails when a later writer took the slot (lapped) */
		word = 2 * h + 1;
		(void)hp_cas_u64(&sl->ver, &word, 2 * h + 2);
	}
	w->published++;
	ring_sleepers(w);
	return 0;
}

void
hp_topic_overrun(struct hp_topic_writer *w)
{
	/* acquire: pairs with another writer's claim */
	(void)room(w, hp_load_acquire_u64(&hdr(&w->map)->claim), 1, NULL);
}

void
hp_topic_spoil_unwritten(struct hp_topic_writer *w)
{
	/* acquire: pairs with the writers' claim */
	uint64_t c = hp_load_acquire_u64(&hdr(&w->map)->claim);
	uint64_t slots = w->map.geom.slots;

	/* at most a ring: the sequences before are lapped */
	for (uint64_t s = c > slots ? c - slots : 0; s < c; s++) {
		struct hp_topic_slot *sl = slot_of(&w->map, s);
		uint64_t v = hp_load_relaxed_u64(&sl->ver);

		if (v >= 2 * s + 2)
			continue;	/* written, or lapped */
		hp_store_relaxed_u32(&sl->len, UINT32_MAX);
		/* release: a reader that sees 2s+2 sees the length */
		(void)hp_cas_u64(&sl->ver, &v, 2 * s + 2);
	}
}

void
hp_topic_writer_announce(struct hp_topic_writer *w)
{
	if (++w->waits == 0)
		w->waits = 1;
	hp_store_relaxed_u32(&hdr(&w->map)->writer_waiting, w->waits);
	/* Dekker with the reader's commit: it sees the flag, or we see
	 * its new position (hp_topic_writer_room after this) */
	hp_fence_seq_cst();
}

void
hp_topic_writer_cancel(struct hp_topic_writer *w)
{
	hp_store_relaxed_u32(&hdr(&w->map)->writer_waiting, 0);
}

int
hp_topic_writer_room(struct hp_topic_writer *w)
{
	return room(w, hp_load_acquire_u64(&hdr(&w->map)->claim), 0, NULL);
}

/* -- reading --------------------------------------------------------------- */

int
hp_topic_reader_init(struct hp_topic_reader *r, int topic_fd, const struct hp_topic_geom *g,
		     int cursor_fd, int bell, uint32_t policy, const char **why)
{
	int rc;

	memset(r, 0, sizeof(*r));
	r->bell = -1;
	if (policy >= HP_TOPIC_POLICIES) {
		rc = fail(why, "no such policy", -EINVAL);
		goto fail;
	}
	if ((rc = hp_topic_map(&r->map, topic_fd, g, 0, why)) != 0)
		goto fail;
	if ((rc = hp_cursor_map(&r->cur, cursor_fd, 1, why)) != 0) {
		hp_topic_unmap(&r->map);
		goto fail;
	}
	close(topic_fd);
	close(cursor_fd);
	r->bell = bell;
	r->policy = policy;
	/* where hubd started it (the retained event, or the next one);
	 * relaxed: our own word */
	r->read = hp_load_relaxed_u64(&r->cur.c->read);
	return 0;
fail:
	close(topic_fd);
	close(cursor_fd);
	if (bell >= 0)
		close(bell);
	return rc;
}

void
hp_topic_reader_free(struct hp_topic_reader *r)
{
	hp_topic_unmap(&r->map);
	hp_cursor_unmap(&r->cur);
	if (r->bell >= 0)
		close(r->bell);
	r->bell = -1;
}

/* The new position and the events lost on the way into the cursor; the
 * writer waiting for room is rung. */
static void
commit(struct hp_topic_reader *r, uint64_t read, uint64_t lost, int taken)
{
	struct hp_topic_cursor *c = r->cur.c;
	uint32_t waiting;

	r->read = read;
	/* relaxed: figures for people */
	if (lost != 0)
		hp_store_relaxed_u64(&c->lost, hp_load_relaxed_u64(&c->lost) + lost);
	if (taken)
		hp_store_relaxed_u64(&c->received, hp_load_relaxed_u64(&c->received) + 1);
	/* release: pairs with the writer's acquire load in sub_read; our
	 * copy of the slot is over before it may write it again */
	hp_store_release_u64(&c->read, read);
	/* Dekker with hp_topic_writer_announce */
	hp_fence_seq_cst();
	/* a writer waits for block subscribers only */
	if (r->policy != HP_TOPIC_BLOCK || r->bell < 0 || r->hung)
		return;
	/* once per wait: the writer, woken, looks at every subscriber */
	waiting = hp_load_relaxed_u32(&hdr(&r->map)->writer_waiting);
	if (waiting != 0 && waiting != r->rung) {
		r->rung = waiting;
		if (hp_doorbell_signal(r->bell) == -EPIPE)
			r->hung = 1;	/* kept open until freed, as the writer's */
	}
}

/* Copies sequence s's event when its slot holds it, complete: 1 with
 * *len, 0 not written yet, 2 lapped (the slot holds a later one, or did
 * while we copied), -EBADMSG a length over event_max. */
static int
copy_slot(const struct hp_topic_reader *r, uint64_t s, uint8_t *buf, size_t *len)
{
	struct hp_topic_slot *sl = slot_of(&r->map, s);
	hp_atomic_u64 *src = slot_words(sl);
	uint64_t v, v2, word;
	uint32_t n;
	size_t i;

	/* acquire: pairs with the release CAS of 2s+2 in hp_topic_publish */
	v = hp_load_acquire_u64(&sl->ver);
	if (v > 2 * s + 2)
		return 2;
	if (v != 2 * s + 2)
		return 0;
	/* relaxed, and read once: checked, then used */
	n = hp_load_relaxed_u32(&sl->len);
	if (n > r->map.geom.event_max)
		return -EBADMSG;
	for (i = 0; i < n / 8; i++) {
		word = hp_load_relaxed_u64(&src[i]);
		memcpy(buf + 8 * i, &word, 8);
	}
	if (n % 8 != 0) {
		word = hp_load_relaxed_u64(&src[i]);
		memcpy(buf + 8 * i, &word, n % 8);
	}
	/* pairs with the writer's release fence after its odd version:
	 * a word of a later write seen means that version is seen below */
	atomic_thread_fence(memory_order_acquire);
	v2 = hp_load_relaxed_u64(&sl->ver);
	if (v2 != v)
		return 2;
	*len = n;
	return 1;
}

/* Where a reader lapped at s goes: the oldest sequence that may still be
 * in the ring, at least s + 1. */
static uint64_t
lap_target(const struct hp_topic_reader *r, uint64_t s)
{
	/* acquire: pairs with the writers' claim */
	uint64_t c = hp_load_acquire_u64(&hdr(&r->map)->claim);
	uint64_t slots = r->map.geom.slots;

	return c > s && c - s > slots ? c - slots : s + 1;
}

static int
next_ring(struct hp_topic_reader *r, uint8_t *buf, struct hp_topic_event *ev)
{
	uint64_t s = r->read, lost = 0;
	size_t len = 0;
	int rc;

	for (int tries = 0; tries < READ_TRIES; tries++) {
		rc = copy_slot(r, s, buf, &len);
		if (rc == 2) {
			uint64_t t = lap_target(r, s);

			lost += t - s;
			s = t;
			continue;
		}
		if (rc == 0)
			break;
		ev->seq = s;
		ev->lost = r->pending + lost;
		r->pending = 0;
		if (rc < 0) {
			/* spoiled: skipped, counted with the ones before */
			ev->lost++;
			ev->len = 0;
			commit(r, s + 1, lost + 1, 0);
			return -EBADMSG;
		}
		ev->len = len;
		commit(r, s + 1, lost, 1);
		return 1;
	}
	/* not written yet, or lapped each time: where we got to stays,
	 * the loss is told with the next event */
	if (s != r->read) {
		r->pending += lost;
		commit(r, s, lost, 0);
	}
	return 0;
}

static int
next_latest(struct hp_topic_reader *r, uint8_t *buf, struct hp_topic_event *ev)
{
	uint64_t c, s;
	size_t len = 0;
	int rc;

	for (int tries = 0; tries < READ_TRIES; tries++) {
		/* acquire: pairs with the writers' claim */
		c = hp_load_acquire_u64(&hdr(&r->map)->claim);
		if (c <= r->read)
			return 0;
		s = c - 1;
		rc = copy_slot(r, s, buf, &len);
		if (rc == 2)
			continue;	/* a newer one came: look again */
		if (rc == 0)
			return 0;	/* its writer rings when done */
		ev->seq = s;
		ev->lost = r->pending + (s - r->read);
		r->pending = 0;
		if (rc < 0) {
			ev->lost++;
			ev->len = 0;
			commit(r, s + 1, s - r->read + 1, 0);
			return -EBADMSG;
		}
		ev->len = len;
		commit(r, s + 1, s - r->read, 1);
		return 1;
	}
	return 0;
}

int
hp_topic_latest(const struct hp_topic_map *m, void *buf, size_t cap, size_t *len,
		uint64_t *seq)
{
	/* copy_slot reads only the mapping of its reader */
	struct hp_topic_reader r = { .map = *m };
	uint64_t c;
	int rc;

	if (cap < m->geom.event_max)
		return -EINVAL;
	for (int tries = 0; tries < READ_TRIES; tries++) {
		/* acquire: pairs with the writers' claim */
		if ((c = hp_load_acquire_u64(&hdr(m)->claim)) == 0)
			return 0;
		if ((rc = copy_slot(&r, c - 1, buf, len)) == 2)
			continue;	/* a newer one came: look again */
		if (rc == 1)
			*seq = c - 1;
		return rc;
	}
	return 0;
}

int
hp_topic_next(struct hp_topic_reader *r, void *buf, size_t cap, struct hp_topic_event *ev)
{
	if (cap < r->map.geom.event_max)
		return -EINVAL;
	memset(ev, 0, sizeof(*ev));
	return r->policy == HP_TOPIC_LATEST ? next_latest(r, buf, ev) : next_ring(r, buf, ev);
}

int
hp_topic_ready(const struct hp_topic_reader *r)
{
	uint64_t s = r->read;

	if (r->policy == HP_TOPIC_LATEST) {
		/* acquire: pairs with the writers' claim */
		uint64_t c = hp_load_acquire_u64(&hdr(&r->map)->claim);

		if (c <= s)
			return 0;
		s = c - 1;
	}
	/* acquire: pairs with the writer's final version (an event, or a
	 * later one: a lap to tell) */
	return hp_load_acquire_u64(&slot_of(&r->map, s)->ver) >= 2 * s + 2;
}

int
hp_topic_reader_announce(struct hp_topic_reader *r)
{
	struct hp_topic_cursor *c = r->cur.c;

	/* relaxed: ordered by the fence, whose partner is the writer's in
	 * ring_sleepers */
	hp_store_relaxed_u32(&c->sleep_gen, hp_load_relaxed_u32(&c->sleep_gen) + 1);
	hp_store_relaxed_u32(&c->sleeping, 1);
	hp_fence_seq_cst();
	return hp_topic_ready(r);
}

void
hp_topic_reader_awake(struct hp_topic_reader *r)
{
	hp_store_relaxed_u32(&r->cur.c->sleeping, 0);
}

void
hp_topic_cursor_read(const struct hp_cursor_map *m, struct hp_topic_figures *f)
{
	/* relaxed: figures for people; the subscriber writes them alone */
	f->read = hp_load_relaxed_u64(&m->c->read);
	f->received = hp_load_relaxed_u64(&m->c->received);
	f->lost = hp_load_relaxed_u64(&m->c->lost);
}

/* -- HP_MSG_TOPIC ------------------------------------------------------------ */

int
hp_topic_msg_fds(uint32_t op)
{
	switch (op) {
	case HP_TOPIC_WRITE:
		return 1;
	case HP_TOPIC_READER:
		return 2;
	case HP_TOPIC_READ:
		return 3;
	default:
		return 0;
	}
}

static void
put_str(struct hp_pc_enc *e, const char *s, size_t max)
{
	hp_pc_put_str(e, s, strnlen(s, max));
}

int64_t
hp_topic_msg_encode(uint8_t *buf, size_t cap, const struct hp_topic_msg *m)
{
	struct hp_pc_enc e;

	hp_pc_enc_init(&e, buf, cap);
	hp_pc_put_u32(&e, m->op);
	hp_pc_put_u32(&e, m->topic);
	switch (m->op) {
	case HP_TOPIC_WRITE:
		hp_pc_put_u32(&e, m->flags);
		hp_pc_put_u32(&e, m->block_ms);
		hp_pc_put_u32(&e, m->geom.slots);
		hp_pc_put_u32(&e, m->geom.event_max);
		put_str(&e, m->name, HP_TOPIC_NAME_MAX);
		put_str(&e, m->sig, HP_SIG_MAX_LEN);
		break;
	case HP_TOPIC_READER:
		hp_pc_put_u32(&e, m->sub);
		hp_pc_put_u32(&e, m->policy);
		break;
	case HP_TOPIC_READER_GONE:
		hp_pc_put_u32(&e, m->sub);
		break;
	case HP_TOPIC_READ:
		hp_pc_put_u32(&e, m->sub);
		hp_pc_put_u32(&e, m->policy);
		hp_pc_put_u32(&e, m->flags);
		hp_pc_put_u32(&e, m->geom.slots);
		hp_pc_put_u32(&e, m->geom.event_max);
		put_str(&e, m->name, HP_TOPIC_NAME_MAX);
		put_str(&e, m->sig, HP_SIG_MAX_LEN);
		break;
	case HP_TOPIC_SIGNATURE:
		put_str(&e, m->sig, HP_SIG_MAX_LEN);
		break;
	case HP_TOPIC_END:
		hp_pc_put_u32(&e, m->sub);
		put_str(&e, m->reason, HP_TOPIC_REASON_MAX);
		break;
	default:
		return -EINVAL;
	}
	return e.err != 0 ? -ENOSPC : (int64_t)e.len;
}

/* A string of min to max bytes, UTF-8 (the decoder checks) with no NUL,
 * into out (NUL-terminated). */
static int
get_str(struct hp_pc_dec *d, char *out, size_t min, size_t max)
{
	const char *s;
	size_t n;

	/* a NUL inside would cut it short of what was sent */
	if (hp_pc_get_str(d, &s, &n) != 0 || n < min || n > max || memchr(s, 0, n) != NULL)
		return -EBADMSG;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

/* flags, slots, event_max (the geometry checked), name and sig. */
static int
get_topic(struct hp_pc_dec *d, struct hp_topic_msg *m, int block_ms)
{
	m->flags = hp_pc_get_u32(d);
	if (block_ms)
		m->block_ms = hp_pc_get_u32(d);
	m->geom.slots = hp_pc_get_u32(d);
	m->geom.event_max = hp_pc_get_u32(d);
	if (d->err != 0 || (m->flags & ~HP_TOPIC_RETAIN) != 0 ||
	    hp_topic_geom_check(&m->geom, NULL) != 0 ||
	    get_str(d, m->name, 1, HP_TOPIC_NAME_MAX) != 0 ||
	    get_str(d, m->sig, 0, HP_SIG_MAX_LEN) != 0)
		return -EBADMSG;
	return 0;
}

int
hp_topic_msg_decode(const uint8_t *buf, size_t len, struct hp_topic_msg *m)
{
	struct hp_pc_dec d;

	memset(m, 0, sizeof(*m));
	hp_pc_dec_init(&d, buf, len);
	m->op = hp_pc_get_u32(&d);
	m->topic = hp_pc_get_u32(&d);
	if (d.err != 0 || m->topic == 0)
		return -EBADMSG;
	switch (m->op) {
	case HP_TOPIC_WRITE:
		if (get_topic(&d, m, 1) != 0)
			return -EBADMSG;
		break;
	case HP_TOPIC_READER:
		m->sub = hp_pc_get_u32(&d);
		m->policy = hp_pc_get_u32(&d);
		if (d.err != 0 || m->policy >= HP_TOPIC_POLICIES)
			return -EBADMSG;
		break;
	case HP_TOPIC_READER_GONE:
		m->sub = hp_pc_get_u32(&d);
		break;
	case HP_TOPIC_READ:
		m->sub = hp_pc_get_u32(&d);
		m->policy = hp_pc_get_u32(&d);
		if (d.err != 0 || m->policy >= HP_TOPIC_POLICIES || get_topic(&d, m, 0) != 0)
			return -EBADMSG;
		break;
	case HP_TOPIC_SIGNATURE:
		if (get_str(&d, m->sig, 0, HP_SIG_MAX_LEN) != 0)
			return -EBADMSG;
		break;
	case HP_TOPIC_END:
		m->sub = hp_pc_get_u32(&d);
		if (d.err != 0 || get_str(&d, m->reason, 0, HP_TOPIC_REASON_MAX) != 0)
			return -EBADMSG;
		break;
	default:
		return -EBADMSG;
	}
	return d.err != 0 || hp_pc_remaining(&d) != 0 ? -EBADMSG : 0;
}
