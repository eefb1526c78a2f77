/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Channel table and credit (r[shm.flow.*], r[shm.id.channel-*]). */
#ifndef HP_CHANNEL_H
#define HP_CHANNEL_H

#include <stdint.h>

#include "proto/layout.h"

#define HP_SIDE_HOST	0	/* allocates even channel ids */
#define HP_SIDE_GUEST	1	/* allocates odd channel ids */

/* r[shm.id.channel-parity] r[shm.flow.channel-table-indexing]: 0 is reserved,
 * ids are below max_channels, the host's even and the guest's odd.
 * Returns 0 or -EPROTO (-EINVAL when allocator_side is not a HP_SIDE_*). */
int hp_chan_id_check(uint32_t id, uint32_t max_channels, int allocator_side);

/* Finds a Free entry with the side's parity, starting after *cursor, and
 * activates it (r[shm.flow.channel-activate]). Returns the id (also left in
 * *cursor) or -EAGAIN when none is free. One allocating thread per side and
 * table: only that side moves entries of its parity from Free to Active
 * (the receiver, which may be the other side, grants credit and frees). */
int64_t hp_chan_open(struct hp_chan_entry *table, uint32_t max_channels,
		     int side, uint32_t initial_credit, uint32_t *cursor);

/* Activates a known id: granted_total = initial_credit, then state Active
 * (release). -EBUSY if the entry is not Free. */
int hp_chan_activate(struct hp_chan_entry *e, uint32_t initial_credit);
/* Active -> Closed (either side saw Close or Reset). */
void hp_chan_close(struct hp_chan_entry *e);
/* -> Free with release (r[shm.flow.channel-id-reuse]); the id may be reused. */
void hp_chan_free(struct hp_chan_entry *e);
uint32_t hp_chan_state(struct hp_chan_entry *e);

/* Receiver: grants bytes more credit (release, r[shm.flow.ordering.receiver]). */
void hp_chan_grant(struct hp_chan_entry *e, uint32_t bytes);

/* Sender: r[shm.flow.remaining-credit] with r[shm.flow.wrap-rule]. Loads
 * granted_total with acquire (r[shm.flow.ordering.sender]) and returns the
 * remaining credit (0..INT32_MAX), or -EPROTO when granted - sent read as
 * i32 is negative (corruption). */
int64_t hp_chan_credit(struct hp_chan_entry *e, uint32_t sent_total);

/* The same rule on plain values, for a receiver checking a sender: may a
 * sender that has sent sent_total send len more under granted_total?
 * 1 yes, 0 no (also when granted - sent is negative as i32). */
int hp_credit_allows(uint32_t granted_total, uint32_t sent_total, uint32_t len);

#endif
