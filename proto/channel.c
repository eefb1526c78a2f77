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
	if (hp_load_acquire_u32(&e->state) != HP_CHAN_FREE)
		return -EBUSY;
	/* r[shm.flow.channel-activate]: credit first, then Active with
	 * release, pairing with the sender's acquire load of state. Only
	 * the allocator of this parity touches a Free entry, so a plain
	 * store suffices. */
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
	hp_store_release_u32(&e->state, HP_CHAN_CLOSED);
}

void
hp_chan_free(struct hp_chan_entry *e)
{
	/* release: pairs with the allocator's acquire load in activate */
	hp_store_release_u32(&e->state, HP_CHAN_FREE);
}

uint32_t
hp_chan_state(struct hp_chan_entry *e)
{
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
	/* r[shm.flow.ordering.sender] */
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

void
hp_chan_table_reset(struct hp_chan_entry *table, uint32_t max_channels)
{
	for (uint32_t i = 0; i < max_channels; i++) {
		hp_store_relaxed_u32(&table[i].granted_total, 0);
		hp_store_release_u32(&table[i].state, HP_CHAN_FREE);
	}
}
