/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Direct lanes between two guests (HP_FEAT_LANES, doc/protocol.md,
 * "Lanes"). A lane is a segment of the spec's format with one peer entry,
 * in a sealed memfd that hubd makes and hands to exactly two guests with
 * the two ends of a doorbell socketpair of its own: side A plays the
 * segment's host and side B its guest, so each sends from its own slot
 * pool over its own ring, and everything either reads from the other is
 * validated as hubd validates a guest. hubd tells each guest of its lanes
 * with HP_MSG_LANE on the hub's ring, the descriptors going just before
 * with a doorbell byte; the guests report back the same way. */
#ifndef HP_LANE_H
#define HP_LANE_H

#include <stdint.h>

#include "proto/endpoint.h"
#include "proto/peer.h"
#include "proto/segment.h"
#include "proto/sig.h"

#define HP_LANE_SIDE_A	0u	/* the segment's host side */
#define HP_LANE_SIDE_B	1u	/* its guest side */

#define HP_LANE_SLOTS	32u	/* slots per side by default: payloads in flight out of line */
#define HP_LANE_SLOTS_MAX 256u
#define HP_LANE_CHANNELS_MAX 65536u	/* a lane's max_channels at most: its
					 * channel ids fit 16 bits */

/* What each side counts of its traffic, written by that side alone into
 * the free bytes of its own line of the lane's peer extension (A: the
 * host's, B: the guest's) now and then, for hubd to read. The peer maps
 * them too: they are figures for people, never acted on. */
struct hp_lane_figures {
	hp_atomic_u64	calls_out;	/* Requests sent over the lane */
	hp_atomic_u64	calls_in;	/* Requests served from it */
	hp_atomic_u64	bytes_out;	/* payload bytes sent */
	hp_atomic_u64	bytes_in;
	hp_atomic_u64	wakes;		/* doorbell writes to the peer */
	hp_atomic_u64	sleeps;		/* waits that slept */
};

/* One lane as a side maps it. */
struct hp_lane_map {
	struct hp_segment	seg;
	struct hp_peer_view	view;
	struct hp_lane_figures	*mine;	/* where this side writes its figures */
};

/* The lane's parameters for a hub with these: its ring size, slots for
 * max_payload bytes (the largest both guests may send and take through
 * the hub), slots of them a side (1 to HP_LANE_SLOTS_MAX), the hub's
 * channel table (up to HP_LANE_CHANNELS_MAX ids) and credit window, no
 * heartbeat. */
void hp_lane_params(const struct hp_params *hub, uint32_t max_payload, uint32_t slots,
		    struct hp_params *lp);

/* hubd: a new lane in m->seg.fd, of which *m keeps only the head mapped
 * (read-only: the figures). 0 or -errno with *why. */
int hp_lane_create(struct hp_lane_map *m, const struct hp_params *lp, const char *name,
		   const char **why);

/* A side: maps the lane's memfd (the fd is closed, whatever happens),
 * validates it as any segment and sets ep up as side's end with doorbell
 * bell. 0 or -errno with *why. */
int hp_lane_attach(struct hp_lane_map *m, int memfd, uint32_t side, int bell,
		   struct hp_endpoint *ep, const char **why);

/* A lane's memfd is named HP_LANE_MEMFD "ID:A-B". Whether fd is the
 * memfd of lane id (what /proc says of it): a guest's check that the
 * descriptors it takes are those its OPEN is about. */
#define HP_LANE_MEMFD	"hub-lane:"
int hp_lane_fd_is(int fd, uint32_t id);

/* The figures side writes. */
struct hp_lane_figures *hp_lane_figures_of(const struct hp_lane_map *m, uint32_t side);
/* ... and as they read now (hubd), into plain numbers. */
struct hp_lane_tally {
	uint64_t	calls_out, calls_in, bytes_out, bytes_in, wakes, sleeps;
};
void hp_lane_figures_read(const struct hp_lane_map *m, uint32_t side, struct hp_lane_tally *t);
/* This side's figures published where hubd reads them. */
void hp_lane_figures_write(const struct hp_lane_map *m, const struct hp_lane_tally *t);

/* -- HP_MSG_LANE --------------------------------------------------------- */

#define HP_LANE_OPEN	1u	/* hub -> guest: a lane; its two descriptors
				 * (memfd, doorbell end) came just before */
#define HP_LANE_ROUTE	2u	/* hub -> guest: call method over lane */
#define HP_LANE_CLOSE	3u	/* hub -> guest: the lane is over (reason) */
#define HP_LANE_CLOSED	4u	/* guest -> hub: it closed the lane (reason,
				 * and whether the peer broke a rule) */
#define HP_LANE_UNROUTE	5u	/* hub -> guest: call method through the hub
				 * again (a monitor watches it); calls in
				 * flight over the lane end there */

#define HP_LANE_NAME_MAX	64
#define HP_LANE_REASON_MAX	160

struct hp_lane_msg {
	uint32_t	op;		/* HP_LANE_* */
	uint32_t	lane;		/* hubd's id for it, never 0 */
	uint32_t	side;		/* OPEN: HP_LANE_SIDE_* */
	uint32_t	calls_max;	/* OPEN: requests the peer may have in
					 * flight to us (calls_in_flight) */
	uint64_t	method;		/* ROUTE, UNROUTE */
	char		sig[HP_SIG_MAX_LEN + 1];	/* ROUTE: the method's signature */
	uint32_t	violation;	/* CLOSED: the peer broke a rule */
	char		peer[HP_LANE_NAME_MAX + 1];	/* OPEN: the other guest */
	uint32_t	bells;		/* OPEN: three more descriptors came with
					 * it (HP_FEAT_BELLS on both sides): the
					 * bell to sleep on, the one to ring,
					 * and a read end of the latter kept
					 * so that a peer gone raises no SIGPIPE */
	char		reason[HP_LANE_REASON_MAX + 1];	/* CLOSE, CLOSED */
};

/* Postcard: op, lane, then per op: OPEN side, calls_max, peer, and
 * bells (bool) only when set (a guest without HP_FEAT_BELLS never sees
 * it); ROUTE
 * method, signature; UNROUTE method; CLOSE reason; CLOSED violation (bool), reason. Encode: the
 * length or -ENOSPC; decode: 0 or -EBADMSG (unknown op, trailing bytes,
 * a string too long, not UTF-8 or with a NUL in it). */
int64_t hp_lane_msg_encode(uint8_t *buf, size_t cap, const struct hp_lane_msg *m);
int hp_lane_msg_decode(const uint8_t *buf, size_t len, struct hp_lane_msg *m);

#endif
