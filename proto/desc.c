/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Descriptor building and validation (desc.h). */
#include <errno.h>
#include <string.h>

#include "proto/channel.h"
#include "proto/desc.h"
#include "proto/varpool.h"

int
hp_desc_set_inline(struct hp_desc *d, const void *payload, uint32_t len)
{
	if (len > HP_INLINE_MAX)
		return -EINVAL;
	/* r[shm.desc.inline-fields]: slot ~0, generation and offset 0 */
	d->payload_slot = HP_SLOT_INLINE;
	d->payload_generation = 0;
	d->payload_offset = 0;
	d->payload_len = len;
	memset(d->inline_payload, 0, sizeof(d->inline_payload));
	if (len > 0)
		memcpy(d->inline_payload, payload, len);
	return 0;
}

void
hp_desc_set_slot(struct hp_desc *d, uint32_t index, uint32_t generation,
		 uint32_t offset, uint32_t len)
{
	d->payload_slot = index;
	d->payload_generation = generation;
	d->payload_offset = offset;
	d->payload_len = len;
	memset(d->inline_payload, 0, sizeof(d->inline_payload));
}

static int
broken(const char **rule, const char *which)
{
	*rule = which;
	return -EPROTO;
}

int
hp_desc_validate(const struct hp_desc *d, const struct hp_desc_limits *lim,
		 const struct hp_slot_pool *pool, const uint8_t **payload,
		 uint32_t *len, const char **rule)
{
	/* d is the receiver's own copy: read once, checked, then used. */
	if ((d->msg_type < HP_MSG_REQUEST || d->msg_type > HP_MSG_GOODBYE) &&
	    (d->msg_type != HP_MSG_LANE || !lim->lane_msgs) &&
	    (d->msg_type != HP_MSG_TOPIC || !lim->topic_msgs))
		return broken(rule, "shm.desc.msg-type");
	/* r[shm.desc.flags]: flags are ignored for forward compatibility;
	 * the reserved bytes and a method_id outside Requests must be 0 */
	if (d->reserved[0] != 0 || d->reserved[1] != 0)
		return broken(rule, "shm.desc.size");
	if (d->msg_type != HP_MSG_REQUEST && d->method_id != 0)
		return broken(rule, "shm.desc.msg-type");
	/* r[shm.handshake]: the host's max_payload_size binds both sides */
	if (d->payload_len > lim->max_payload_size)
		return broken(rule, "shm.handshake.no-negotiation");
	switch (d->msg_type) {
	case HP_MSG_DATA:
	case HP_MSG_CLOSE:
	case HP_MSG_RESET:
		/* r[shm.id.channel-parity]: 0 is nobody's;
		 * r[shm.flow.channel-table-indexing]: below max_channels.
		 * Parity itself is the receiver's to check: Data flows on
		 * ids either side allocated. */
		if (d->id == 0 || d->id >= lim->max_channels)
			return broken(rule, "shm.flow.channel-table-indexing");
		break;
	}
	if (d->payload_slot == HP_SLOT_INLINE) {
		/* r[shm.desc.inline-fields] */
		if (d->payload_generation != 0 || d->payload_offset != 0 ||
		    d->payload_len > HP_INLINE_MAX)
			return broken(rule, "shm.desc.inline-fields");
		*payload = d->inline_payload;
		*len = d->payload_len;
		return 0;
	}
	/* r[shm.payload.inline]: what fits inline must be inline */
	if (d->payload_len <= HP_INLINE_MAX)
		return broken(rule, "shm.payload.inline");
	/* r[shm.varslot.ownership]: a variable slot, InFlight, the
	 * sender's (doc/protocol.md, "Variable-size slots") */
	if (lim->var != NULL && hp_var_is_slot(d->payload_slot)) {
		if (hp_var_check(lim->var, d->payload_slot, d->payload_generation,
				 d->payload_offset, d->payload_len, lim->var_owner,
				 payload, rule) != 0)
			return -EPROTO;
		*len = d->payload_len;
		return 0;
	}
	/* r[shm.payload.slot]: in a live slot of the sender's pool */
	if (pool == NULL)
		return broken(rule, "shm.payload.slot");
	if (hp_slot_check(pool, d->payload_slot, d->payload_generation,
			  d->payload_offset, d->payload_len, payload, rule) != 0)
		return -EPROTO;
	*len = d->payload_len;
	return 0;
}
