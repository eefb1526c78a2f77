/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Channel table and credit (channel.h). */
#include <errno.h>

#include "proto/channel.h"

int
hp_chan_id_check(uint32_t id, uint32_t max_channels, int side)
{
	if (side != HP_SIDE_HOST && side != HP_SIDE_GUEST)
		return -EINVAL;
	/* r[shm.flow.channel-table-indexing]: 0 unused, below max_channels */
	if (id == 0 || id >= max_channels)
		return -EPROTO;
	/* r[shm.id.channel-parity]: the host's even, the guest's odd */
	if ((id & 1) != (side == HP_SIDE_GUEST ? 1u : 0u))
		return -EPROTO;
	return 0;
}

int
hp_chan_activate(struct hp_chan_entry *e, uint32_t initial_credit)
{
	/* acquire: pairs with the release store of Free in hp_chan_free
	 * (the last receiver's): the entry's last user is done with it */
	if (hp_load_acquire_u32(&e->state) != HP_CHAN_FREE)
		return -EBUSY;
	/* r[shm.flow.channel-activate]: credit first, relaxed: only the
	 * allocator of this parity writes a Free entry, and the release
	 * store of Active publishes it; that release pairs with the acquire
	 * load of state in hp_chan_state, by which the sender sees the
	 * channel Active before it reads its credit. */
	hp_store_relaxed_u32(&e->granted_total, initial_credit);
	hp_store_release_u32(&e->state, HP_CHAN_ACTIVE);
	return 0;
}

int64_t
hp_chan_open(struct hp_chan_entry *table, uint32_t max_channels, int side,
	     uint32_t initial_credit, uint32_t *cursor)
{
	if (side != HP_SIDE_HOST && side != HP_SIDE_GUEST)
		return -EINVAL;
	/* ids of one parity: guest 1, 3, 5...; host 2, 4, 6... */
	uint32_t first = side == HP_SIDE_GUEST ? 1 : 2;
	uint32_t count = max_channels > first ? (max_channels - first + 1) / 2 : 0;
	uint32_t k0 = *cursor >= first && *cursor < max_channels ?
	    (*cursor - first) / 2 + 1 : 0;

	/* r[shm.flow.channel-id-reuse]: start after the last id handed out,
	 * so a just-freed id is reused as late as possible */
	for (uint32_t n = 0; n < count; n++) {
		uint32_t id = first + 2 * ((k0 + n) % count);

		if (hp_chan_activate(&table[id], initial_credit) == 0) {
			*cursor = id;
			return id;
		}
	}
	return -EAGAIN;
}

void
hp_chan_close(struct hp_chan_entry *e)
{
	/* release: pairs with the acquire load of state in hp_chan_state */
	hp_store_release_u32(&e->state, HP_CHAN_CLOSED);
}

void
hp_chan_free(struct hp_chan_entry *e)
{
	/* r[shm.flow.channel-id-reuse] 2: release: pairs with the
	 * allocator's acquire load of state in hp_chan_activate, so our
	 * last use of the entry happens before its reuse */
	hp_store_release_u32(&e->state, HP_CHAN_FREE);
}

uint32_t
hp_chan_state(struct hp_chan_entry *e)
{
	/* acquire: pairs with the release stores of state in
	 * hp_chan_activate (Active: the initial granted_total is visible
	 * after it), hp_chan_close and hp_chan_free */
	return hp_load_acquire_u32(&e->state);
}

void
hp_chan_grant(struct hp_chan_entry *e, uint32_t bytes)
{
	/* r[shm.flow.granted-total] r[shm.flow.ordering.receiver]: release,
	 * pairs with the sender's acquire load in hp_chan_credit */
	hp_fetch_add_u32(&e->granted_total, bytes, memory_order_release);
}

int64_t
hp_chan_credit(struct hp_chan_entry *e, uint32_t sent_total)
{
	/* r[shm.flow.ordering.sender]: acquire: pairs with the release add
	 * in hp_chan_grant (the initial credit is published by the release
	 * store of Active in hp_chan_activate, seen through hp_chan_state) */
	uint32_t granted = hp_load_acquire_u32(&e->granted_total);
	/* r[shm.flow.remaining-credit] r[shm.flow.wrap-rule]: wrapping
	 * difference read as i32; negative means corruption */
	int32_t remaining = (int32_t)(granted - sent_total);

	return remaining < 0 ? -EPROTO : remaining;
}

int
hp_credit_allows(uint32_t granted_total, uint32_t sent_total, uint32_t len)
{
	int32_t remaining = (int32_t)(granted_total - sent_total);

	return remaining >= 0 && (uint32_t)remaining >= len;
}
