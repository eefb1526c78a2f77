/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Segment parameters the unit tests and fuzzers build their small segments
 * with: the defaults, a few guests, short rings, small slots, and the
 * largest payload a slot holds. */
#ifndef HUB_TESTSEG_H
#define HUB_TESTSEG_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/segment.h"
#include "proto/slot.h"

static inline struct hp_params
testseg_params(uint32_t max_guests, uint32_t ring_size, uint32_t slot_size,
	       uint32_t slots_per_guest)
{
	struct hp_params p;

	hp_params_default(&p);
	p.max_guests = max_guests;
	p.ring_size = ring_size;
	p.slot_size = slot_size;
	p.slots_per_guest = slots_per_guest;
	p.max_payload_size = slot_size - HP_SLOT_GEN_SIZE;
	p.var.nclasses = 0;	/* the fixed pools alone (check_varpool has the rest) */
	return p;
}

/* A segment for every guest (peer_id 0) in a sealed memfd, and in path
 * (64 bytes) what a guest attaches by, /proc/self/fd/N: a forked child
 * inherits the fd. */
static inline int
testseg_create(struct hp_segment *seg, char *path, const struct hp_params *p,
	       const char **why)
{
	int rc = hp_segment_create(seg, p, 0, p->var.nclasses > 0 ? HP_FEAT_VARSLOT : 0,
				   "hub-test", why);

	if (rc == 0)
		snprintf(path, 64, "/proc/self/fd/%d", seg->fd);
	return rc;
}

/* A segment image as another host that follows the spec might lay it out,
 * nothing like hubd's: the slot region first (slot_size 4100, not a
 * multiple of 64), then the channel tables (4-byte aligned only, guest 2's
 * first), the rings, and the peer table last (8-byte aligned only); no
 * extension table. 2 guests, 2 slots each. malloc'd; *size its length. */
#define TESTSEG_FOREIGN_SLOTS	2
static inline uint8_t *
testseg_foreign(size_t *size)
{
	const uint32_t guests = 2, ring = 4, slot = 4100, chans = 4;
	uint64_t pool = hp_slot_pool_header_size(TESTSEG_FOREIGN_SLOTS) +
	    (uint64_t)TESTSEG_FOREIGN_SLOTS * slot;
	uint64_t slots = 128, chan_at = slots + (guests + 1) * pool + 4;
	uint64_t rings = (chan_at + guests * chans * 16 + 63) / 64 * 64;
	uint64_t peers = rings + guests * 2 * ring * 64 + 8;
	uint64_t total = peers + guests * 64;
	uint8_t *img = calloc(1, total);
	struct hp_header *h = (struct hp_header *)(void *)img;
	struct hp_peer_entry *e = (struct hp_peer_entry *)(void *)(img + peers);
	uint64_t magic;

	h->version = HP_VERSION;
	h->header_size = HP_HEADER_SIZE;
	h->total_size = total;
	h->max_payload_size = slot - 4;
	h->initial_credit = 8192;
	h->max_guests = guests;
	h->ring_size = ring;
	h->peer_table_offset = peers;
	h->slot_region_offset = slots;
	h->slot_size = slot;
	h->slots_per_guest = TESTSEG_FOREIGN_SLOTS;
	h->max_channels = chans;
	for (uint32_t i = 0; i < guests; i++) {
		e[i].ring_offset = rings + (uint64_t)i * 2 * ring * 64;
		e[i].slot_pool_offset = slots + (i + 1) * pool;
		e[i].channel_table_offset = chan_at + (uint64_t)(guests - 1 - i) * chans * 16;
	}
	for (uint32_t i = 0; i <= guests; i++)
		*(uint64_t *)(void *)(img + slots + i * pool) = (1u << TESTSEG_FOREIGN_SLOTS) - 1;
	memcpy(&magic, HP_MAGIC, HP_MAGIC_LEN);
	memcpy(img, &magic, sizeof(magic));
	*size = total;
	return img;
}

#endif
