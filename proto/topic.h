/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Topics: events one-to-many, written once and read in place
 * (doc/events.md).
 *
 * A topic's events live in a sealed memfd that hubd makes (the topic's
 * memory): a header, then a ring of `slots` slots of `event_max` bytes.
 * Its writers (the guest that publishes it, and hubd for the operator's
 * emit and the hub.* discovery topics) map it read-write; every
 * subscriber maps it read-only from a descriptor hubd reopened
 * read-only, and no one can resize it (F_SEAL_SHRINK, F_SEAL_GROW,
 * F_SEAL_SEAL). A subscriber's read position is in its cursor, a memfd of
 * one page that only it maps writable; the publisher and hubd map it
 * read-only. So no subscriber changes what another reads, and a
 * publisher reads a subscriber's position only to honour its policy.
 *
 * Sequence numbers. A writer claims sequence h with a compare-and-swap
 * on the header's claim word, once its block subscribers have room for
 * h (a fetch-add after many lost races: a hostile co-writer cannot hold
 * it back), then writes slot h % slots as a seqlock: version
 * 2h+1 while it writes, 2h+2 once the event is complete. A reader that
 * wants sequence r takes the slot's event when its version is 2r+2 and
 * still is after the copy; a larger version means it was lapped.
 *
 * Policies, per subscriber (hubd tells the publisher each one's):
 *   block	   the writer does not claim a slot a block subscriber has
 *		   not read yet; it waits (libguest: up to the topic's
 *		   block timeout), then overruns that subscriber, which
 *		   then loses events like a drop-oldest one until it has
 *		   caught up
 *   drop-oldest  never waited for: lapped, it learns how many it lost
 *   latest	   reads only the newest event each time it looks
 *
 * Wakes. Each subscription has a doorbell socketpair of its own: the
 * subscriber holds end B, the publisher end A (hubd keeps a copy of A for
 * its own writes). A subscriber about to sleep sets `sleeping` in its
 * cursor, fences and looks again (Dekker, as proto/endpoint.h); a writer
 * fences after each event and rings A for each subscriber whose
 * `sleeping` is set with a sleep generation it has not rung yet: no
 * syscall while both are busy. A publisher that waits for a block
 * subscriber sets the header's `writer_waiting` to its wait's number (one
 * more each wait, never 0), and a subscriber that moves its position
 * while it is set rings B, once per wait: a ring per event taken cost
 * the subscriber a system call each while the publisher was still on its
 * way to sleep or back, and held the pace of a topic with a block
 * subscriber to a fraction. A peer can ring, or hang
 * up, only its own subscription's bell: a hostile one costs the other
 * side wakes, never a lost event.
 *
 * Everything in the topic's memory is the writers'; a reader trusts none
 * of it (the geometry comes from hubd's message, never the header): a
 * hostile publisher makes its subscribers see lost or bad events, never
 * crash or hang. */
#ifndef HP_TOPIC_H
#define HP_TOPIC_H

#include <stddef.h>
#include <stdint.h>

#include "proto/atomic.h"
#include "proto/layout.h"
#include "proto/sig.h"

#define HP_TOPIC_MAGIC		0x31435054425548ull	/* "HUBTPC1" */
#define HP_TOPIC_NAME_MAX	64	/* a topic's name, bytes: as a method's */
#define HP_TOPIC_REASON_MAX	160

#define HP_TOPIC_SLOTS_MIN	2u
#define HP_TOPIC_SLOTS_MAX	65536u	/* a power of two in between */
#define HP_TOPIC_EVENT_MIN	8u
#define HP_TOPIC_EVENT_MAX	(1u << 20)	/* bytes of one event at most */
#define HP_TOPIC_SIZE_MAX	(256ull << 20)	/* a topic's memory at most */

#define HP_TOPIC_BLOCK		0u
#define HP_TOPIC_DROP_OLDEST	1u
#define HP_TOPIC_LATEST		2u
#define HP_TOPIC_POLICIES	3u

#define HP_TOPIC_RETAIN		1u	/* flags: a new subscriber starts at
					 * the newest event, not after it */

/* A topic's signature: its events' arguments, as a method's before "->"
 * ("str", "u64,list<str>"; "" for none), parsed into sig with a result
 * of unit. 0, or -EINVAL with *why: malformed, too long, a result given,
 * a chan<T> (an event carries no channel). */
int hp_topic_sig_parse(const char *text, struct hp_sig *sig, const char **why);

/* A policy's name ("block", "drop-oldest", "latest") and back (-1). */
const char *hp_topic_policy_name(uint32_t policy);
int hp_topic_policy_parse(const char *s);

/* The shape of a topic's memory, decided by hubd (config) and told to
 * every party in its message, never read from the memory. */
struct hp_topic_geom {
	uint32_t	slots;		/* a power of two */
	uint32_t	event_max;	/* bytes of one event at most */
};

/* 0, or -EINVAL with *why: slots not a power of two in range, event_max
 * out of range, the memory over HP_TOPIC_SIZE_MAX. */
int hp_topic_geom_check(const struct hp_topic_geom *g, const char **why);
/* Bytes of the topic's memory, and of one slot. */
size_t hp_topic_size(const struct hp_topic_geom *g);
size_t hp_topic_slot_size(const struct hp_topic_geom *g);

/* -- the memory ------------------------------------------------------------ */

struct hp_topic_hdr {
	uint64_t	magic;		/* HP_TOPIC_MAGIC, for people and tools */
	uint32_t	slots;		/* as made (informative only) */
	uint32_t	event_max;
	uint8_t		pad0[HP_CACHE_LINE - 16];
	hp_atomic_u64	claim;		/* next sequence a writer takes */
	uint8_t		pad1[HP_CACHE_LINE - 8];
	hp_atomic_u32	writer_waiting;	/* a writer waits for a block subscriber */
	uint8_t		pad2[HP_CACHE_LINE - 4];
};

struct hp_topic_slot {
	hp_atomic_u64	ver;		/* 2h+1 writing sequence h, 2h+2 written */
	hp_atomic_u32	len;		/* the event's bytes */
	uint32_t	pad;
	/* then event_max bytes, rounded up to the cache line */
};

/* A subscriber's cursor: one page, written by that subscriber alone. */
struct hp_topic_cursor {
	hp_atomic_u64	read;		/* the next sequence it reads */
	hp_atomic_u32	sleeping;	/* 1: asleep on its bell, or about to be */
	hp_atomic_u32	sleep_gen;	/* one more at each sleep */
	hp_atomic_u64	received;	/* events taken (figures for people) */
	hp_atomic_u64	lost;		/* lapped, skipped (latest) or bad */
};

/* A mapping of a topic's memory. */
struct hp_topic_map {
	uint8_t			*base;
	size_t			size;
	struct hp_topic_geom	geom;
	int			writable;
};

/* A mapping of a cursor. */
struct hp_cursor_map {
	struct hp_topic_cursor	*c;
	int			writable;
};

/* hubd: a new topic memory for name with geometry g in *fd (read-write,
 * sealed, initialised). 0 or -errno with *why. */
int hp_topic_create(const char *name, const struct hp_topic_geom *g, int *fd,
		    const char **why);
/* hubd: a new cursor for subscription id in *fd (read-write, sealed,
 * zero but for read = start). 0 or -errno with *why. */
int hp_topic_cursor_create(const char *name, uint64_t start, int *fd, const char **why);
/* A new read-only descriptor of the same memfd (reopened through
 * /proc/self/fd): what a party that must not write it is handed. -errno
 * on failure. */
int hp_topic_reopen_ro(int fd);

/* Maps fd (kept open by the caller) as a topic of geometry g: checks
 * its size and seals first. 0 or -errno with *why. */
int hp_topic_map(struct hp_topic_map *m, int fd, const struct hp_topic_geom *g, int writable,
		 const char **why);
void hp_topic_unmap(struct hp_topic_map *m);
int hp_cursor_map(struct hp_cursor_map *m, int fd, int writable, const char **why);
void hp_cursor_unmap(struct hp_cursor_map *m);

/* The topic's next sequence now (what a new subscriber starts at). */
uint64_t hp_topic_claimed(const struct hp_topic_map *m);

/* -- writing --------------------------------------------------------------- */

/* A subscriber as a writer sees it. */
struct hp_topic_sub {
	uint32_t		id;		/* hubd's id of the subscription */
	uint32_t		policy;		/* HP_TOPIC_* */
	struct hp_cursor_map	cur;		/* read-only */
	int			bell;		/* end A, -1: none */
	int			hung;		/* its bell hung up: not rung again
						 * (the fd stays open until removed) */
	uint32_t		rung_gen;	/* the sleep generation last rung */
	int			overrun;	/* block, overrun: not waited for
						 * until it has caught up */
	uint64_t		rings;		/* bells rung (figures) */
};

struct hp_topic_writer {
	struct hp_topic_map	map;		/* read-write */
	struct hp_topic_sub	*subs;
	uint32_t		nsubs, cap;
	uint64_t		published;	/* events this writer wrote */
	uint64_t		overruns;	/* block subscribers overrun */
	uint32_t		waits;		/* the number of its last wait */
};

/* w over the mapping m (taken over: unmapped by hp_topic_writer_free). */
void hp_topic_writer_init(struct hp_topic_writer *w, const struct hp_topic_map *m);
void hp_topic_writer_free(struct hp_topic_writer *w);
/* A subscriber, whose cursor (read-only) and bell end A the writer takes
 * over (closed when it goes, and on failure). 0, -ENOMEM, -EINVAL (bad
 * policy) or the mapping's -errno with *why. */
int hp_topic_writer_add(struct hp_topic_writer *w, uint32_t id, uint32_t policy, int cursor_fd,
			int bell, const char **why);
/* Takes subscription id away (0, or -ENOENT). */
int hp_topic_writer_remove(struct hp_topic_writer *w, uint32_t id);

/* Writes one event of len bytes (at most event_max: else -EMSGSIZE),
 * rings the subscribers that sleep, and answers 0; or -EAGAIN, nothing
 * written, when a block subscriber has not read the slot the event needs
 * (*blocker: its index in subs). Never waits. */
int hp_topic_publish(struct hp_topic_writer *w, const void *ev, size_t len, uint32_t *blocker);
/* Marks every block subscriber that holds the next slot overrun (the
 * writer's timeout ran out): the next publish does not wait for them. */
void hp_topic_overrun(struct hp_topic_writer *w);
/* hubd, once the publisher is gone (it may have died inside a publish,
 * its event claimed and never written): each event of the last ring not
 * written is marked spoiled (a length over event_max), so that its
 * readers skip it as bad and go on, instead of waiting there until a
 * later event laps its slot. Call it with no writer left but the caller. */
void hp_topic_spoil_unwritten(struct hp_topic_writer *w);
/* Waiting for room: announce (sets writer_waiting to the wait's number,
 * fences) and take back.
 * hp_topic_writer_room: whether a publish would not be refused now. */
void hp_topic_writer_announce(struct hp_topic_writer *w);
void hp_topic_writer_cancel(struct hp_topic_writer *w);
int hp_topic_writer_room(struct hp_topic_writer *w);

/* -- reading --------------------------------------------------------------- */

struct hp_topic_reader {
	struct hp_topic_map	map;		/* read-only */
	struct hp_cursor_map	cur;		/* read-write */
	int			bell;		/* end B, -1: none */
	int			hung;		/* its bell hung up: not rung again */
	uint32_t		rung;		/* the writer's wait it rang for */
	uint32_t		policy;
	uint64_t		read;		/* private copy of cur->read */
	uint64_t		pending;	/* lost, told with the next event
						 * (a lap landed on a slot not
						 * written yet) */
};

/* What hp_topic_next took. */
struct hp_topic_event {
	uint64_t	seq;		/* the event's sequence */
	uint64_t	lost;		/* events lost just before it (lapped,
					 * skipped under latest, or bad) */
	size_t		len;
};

/* r over the topic memory topic_fd (read-only) of geometry g, the cursor
 * cursor_fd (read-write) and bell end B; all three are taken over
 * (closed by hp_topic_reader_free, and on failure). 0 or -errno with
 * *why. */
int hp_topic_reader_init(struct hp_topic_reader *r, int topic_fd, const struct hp_topic_geom *g,
			 int cursor_fd, int bell, uint32_t policy, const char **why);
void hp_topic_reader_free(struct hp_topic_reader *r);

/* The next event for r's policy copied into buf (cap at least event_max):
 * 1 with *ev, 0 none yet, or -EBADMSG: an event the writer spoiled
 * (a length over event_max), skipped and counted lost (*ev says where;
 * its lost counts it too). An event changed while read was lapped: the
 * reader moves on as for any lap. Advances the cursor and rings the
 * writer if it waits for room. -EINVAL: cap below event_max. */
int hp_topic_next(struct hp_topic_reader *r, void *buf, size_t cap, struct hp_topic_event *ev);
/* Whether hp_topic_next has something (an event or news of a loss). */
int hp_topic_ready(const struct hp_topic_reader *r);
/* Before a sleep: sets sleeping (a new generation), fences and looks
 * again: 1 when something came meanwhile (do not sleep). After it:
 * hp_topic_reader_awake. */
int hp_topic_reader_announce(struct hp_topic_reader *r);
void hp_topic_reader_awake(struct hp_topic_reader *r);

/* The newest complete event, copied into buf (cap at least event_max):
 * 1 with *len and *seq, 0 none yet, -EBADMSG spoiled. Reads only (hubd's
 * retained value for hubctl topics). */
int hp_topic_latest(const struct hp_topic_map *m, void *buf, size_t cap, size_t *len,
		    uint64_t *seq);

/* -- figures (hubd, hubctl topics) ------------------------------------------ */

struct hp_topic_figures {
	uint64_t	read;		/* position */
	uint64_t	received;
	uint64_t	lost;
};
void hp_topic_cursor_read(const struct hp_cursor_map *m, struct hp_topic_figures *f);

/* -- HP_MSG_TOPIC (hub -> guest) -------------------------------------------- */

#define HP_TOPIC_WRITE		1u	/* you publish topic: its memory (rw) came before */
#define HP_TOPIC_READER		2u	/* a subscriber of your topic: its cursor
					 * (ro) and bell end A came before */
#define HP_TOPIC_READER_GONE	3u	/* that subscriber left */
#define HP_TOPIC_READ		4u	/* your subscription: the topic's memory
					 * (ro), your cursor (rw) and bell end B
					 * came before */
#define HP_TOPIC_SIGNATURE	5u	/* the topic's signature is now sig */
#define HP_TOPIC_END		6u	/* subscription sub (or your publishing,
					 * sub 0) is over: reason */

struct hp_topic_msg {
	uint32_t		op;		/* HP_TOPIC_* above */
	uint32_t		topic;		/* hubd's id, never 0 */
	uint32_t		sub;		/* READER, READER_GONE, READ, END */
	uint32_t		policy;		/* READER, READ */
	uint32_t		flags;		/* WRITE, READ: HP_TOPIC_RETAIN */
	uint32_t		block_ms;	/* WRITE: how long to wait for a block
						 * subscriber before overrunning it */
	struct hp_topic_geom	geom;		/* WRITE, READ */
	char			name[HP_TOPIC_NAME_MAX + 1];	/* WRITE, READ */
	char			sig[HP_SIG_MAX_LEN + 1];	/* WRITE, READ, SIGNATURE */
	char			reason[HP_TOPIC_REASON_MAX + 1];	/* END */
};

/* The descriptors that come before a message of op (0 to 3). */
int hp_topic_msg_fds(uint32_t op);

/* Postcard: op, topic, then per op: WRITE flags, block_ms, slots,
 * event_max, name, sig; READER sub, policy; READER_GONE sub; READ sub,
 * policy, flags, slots, event_max, name, sig; SIGNATURE sig; END sub,
 * reason. Encode: the length or -ENOSPC; decode: 0 or -EBADMSG (unknown
 * op, trailing bytes, a string too long, not UTF-8 or with a NUL, a
 * geometry hp_topic_geom_check refuses, a policy out of range). */
int64_t hp_topic_msg_encode(uint8_t *buf, size_t cap, const struct hp_topic_msg *m);
int hp_topic_msg_decode(const uint8_t *buf, size_t len, struct hp_topic_msg *m);

#endif
