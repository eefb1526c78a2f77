/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Segment geometry, creation (host) and attach with full validation (guest,
 * inspector). Functions return 0 or -errno; on error *why, when not NULL,
 * points at a static sentence saying what is wrong. */
#ifndef HP_SEGMENT_H
#define HP_SEGMENT_H

#include <stdint.h>
#include <sys/types.h>

#include "proto/layout.h"
#include "proto/varpool.h"

/* The host's unilateral configuration (r[shm.handshake]). */
struct hp_params {
	uint32_t	max_guests;		/* 1..255 */
	uint32_t	ring_size;		/* power of two, 2..HP_RING_SIZE_MAX */
	uint32_t	slot_size;		/* hubd's: multiple of 64; any spec
						 * segment's: multiple of 4, > 4 */
	uint32_t	slots_per_guest;	/* 1..HP_SLOTS_MAX */
	uint32_t	max_channels;		/* 2..HP_CHANNELS_MAX (id 0 unused) */
	uint32_t	initial_credit;		/* 1..INT32_MAX */
	uint32_t	max_payload_size;	/* 1..slot_size - 4 */
	uint64_t	heartbeat_interval;	/* ns, 0 = off */
	struct hp_var_conf var;			/* the shared variable pool: a
						 * file of its own (hp_segment_attach_pool) */
};

#define HP_RING_SIZE_MAX	65536u
#define HP_SLOTS_MAX		(1u << 20)
#define HP_CHANNELS_MAX		(1u << 20)
#define HP_SEGMENT_MAX		(64ull << 30)	/* 64 GiB: refuse anything larger */

/* Where a segment's areas are. hubd computes all of it for the segments it
 * creates (hp_geometry_compute: every offset a multiple of 64,
 * r[shm.ring.alignment], r[shm.slot.pool-header-size]). A reader of any
 * spec segment (hp_segment_validate) knows only what the header says: the
 * peer table, the slot region, the extension table if announced, and the
 * sizes; ring_region_offset and chan_region_offset are then 0, and each
 * guest's areas are where its PeerEntry says (hp_peer_view_guest). */
struct hp_geometry {
	uint64_t	peer_table_offset;
	uint64_t	ext_offset;		/* hp_peer_ext[max_guests], 0: none */
	uint64_t	ring_region_offset;	/* hubd's: per guest g2h then h2g ring */
	uint64_t	ring_bytes;		/* 2 * ring_size * 64 per guest */
	uint64_t	chan_region_offset;	/* hubd's: per guest a channel table */
	uint64_t	chan_bytes;		/* max_channels * 16 (hubd pads to 64) */
	uint64_t	slot_region_offset;	/* host pool, then guest pools */
	uint64_t	pool_header_size;	/* bitmap padded to 64 */
	uint64_t	pool_size;		/* header + slots_per_guest * slot_size */
	uint64_t	total_size;
};

/* Defaults a hub runs with when its config says nothing. */
void hp_params_default(struct hp_params *p);

/* -EINVAL with *why for parameters out of range or a segment too large. */
int hp_geometry_compute(const struct hp_params *p, struct hp_geometry *g,
			const char **why);

/* Offsets of one guest's areas as the host lays them out (peer_id 1..max). */
uint64_t hp_geometry_ring_offset(const struct hp_geometry *g, uint32_t peer_id);
uint64_t hp_geometry_chan_offset(const struct hp_geometry *g, uint32_t peer_id);
/* r[shm.segment.host-slots] pool 0 is the host's;
 * r[shm.segment.guest-slot-offset] pool P is guest P's. */
uint64_t hp_geometry_pool_offset(const struct hp_geometry *g, uint32_t peer_id);

struct hp_segment {
	uint8_t			*base;
	uint64_t		size;
	int			fd;
	int			writable;
	struct hp_params	params;
	struct hp_geometry	geo;
	uint32_t		host_features;
	struct hp_varpool	var;		/* nclasses 0: none */
	uint8_t			*var_map;	/* a guest's mapping of its pool file */
	uint64_t		var_map_size;
};

/* Peer P's entry in the table; NULL if peer_id is not 1..max_guests
 * (r[shm.topology.peer-id]). Its words are proto/peer.h's to touch. */
struct hp_peer_entry *hp_segment_peer(const struct hp_segment *seg, uint32_t peer_id);

/* A sealed memfd of size bytes named name (for /proc and debuggers only):
 * nobody can shrink it (F_SEAL_SHRINK: a page gone under a mapping is a
 * SIGBUS), nor grow it when fixed. The fd, or -errno with *why. */
int hp_segment_memfd(const char *name, uint64_t size, int fixed, const char **why);

/* r[shm.file.create]: a segment in a fresh sealed memfd (hp_segment_memfd),
 * mapped MAP_SHARED, every structure initialised, the magic published
 * last. peer_id 1..max_guests: that guest's domain, in which its entry
 * alone has areas (the others stay Empty); 0: every guest's, one segment
 * for a whole hub as the spec draws it. features: HP_FEAT_VARSLOT when
 * the host honours a shared pool (a file of its own). Attach to it as
 * /proc/self/fd/N, or hand the fd to a guest. */
int hp_segment_create(struct hp_segment *seg, const struct hp_params *p, uint32_t peer_id,
		      uint32_t features, const char *name, const char **why);

#define HP_ATTACH_RDONLY	0x1	/* map read-only (inspection) */

/* r[shm.file.attach]: open, map and validate. -EAGAIN when the magic is
 * not there yet (a hub still creating it: retry briefly); -EBADMSG for a
 * foreign or corrupt file, or anything that is not a regular file (never
 * blocks on a FIFO); -EPROTONOSUPPORT for another version. */
int hp_segment_attach(struct hp_segment *seg, const char *path, int flags,
		      const char **why);

/* Validates a mapped segment image of size bytes, laid out by any host that
 * follows the spec: header fields in range, total_size the file size, the
 * peer table, the slot region and (when host_features announces it) the
 * extension table inside the file, aligned for their atomics and clear of
 * the header and of each other. Fills p and g on success. Never reads
 * outside [base, base + size). Used by attach, inspection and the fuzzer.
 * Peer entries are not looked at: a guest can write its own, and must not
 * be able to stop others from attaching that way; each guest checks its
 * own entry (hp_peer_view_guest, peer.h). */
int hp_segment_validate(const uint8_t *base, uint64_t size,
			struct hp_params *p, struct hp_geometry *g,
			const char **why);

/* A guest's shared pool, a file of its own (--hub-pool): mapped and its
 * headers checked into seg->var, self the owner id it allocates as. */
int hp_segment_attach_pool(struct hp_segment *seg, const char *path, uint32_t self,
			   const char **why);

/* Unmaps and closes (the pool too). */
void hp_segment_close(struct hp_segment *seg);

static inline struct hp_header *hp_segment_header(const struct hp_segment *seg)
{
	return (struct hp_header *)(void *)seg->base;
}

/* r[shm.goodbye.host] r[shm.goodbye.host-atomic]: the host is shutting
 * down. Relaxed both ways: a flag that publishes nothing else (the
 * doorbell rung after it is what wakes the guest). Only hubd says it. */
void hp_host_goodbye_say(const struct hp_segment *seg);
int hp_host_goodbye_said(const struct hp_segment *seg);

/* r[shm.segment.peer-table]: one guest's areas, at the offsets its
 * PeerEntry gives (read once by the caller: hp_peer_view_guest, peer.h),
 * checked against the validated geometry: 0, or -EBADMSG with *why naming
 * the area and the problem. */
int hp_segment_check_areas(const struct hp_segment *seg, uint64_t ring_offset,
			   uint64_t slot_pool_offset, uint64_t channel_table_offset,
			   const char **why);

#endif
