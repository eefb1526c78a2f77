/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Building descriptors and validating received ones. A receiver copies a
 * descriptor out of the ring once (hp_ring_dequeue and _batch do), validates
 * the copy here and acts only on the copy. */
#ifndef HP_DESC_H
#define HP_DESC_H

#include <stdint.h>

#include "proto/layout.h"
#include "proto/slot.h"

/* Limits a receiver checks a descriptor against. */
struct hp_varpool;

struct hp_desc_limits {
	uint32_t	max_payload_size;
	uint32_t	max_channels;
	struct hp_varpool *var;		/* variable slots accepted (both sides
					 * announced HP_FEAT_VARSLOT), else NULL */
	uint32_t	var_owner;	/* who a received variable slot's owner is */
	uint8_t		lane_msgs;	/* HP_MSG_LANE accepted (HP_FEAT_LANES on
					 * a hub's ring) */
	uint8_t		topic_msgs;	/* HP_MSG_TOPIC accepted (a guest, on
					 * hubd's ring) */
};

/* r[shm.payload.inline] r[shm.desc.inline-fields]: payload of len <= 32
 * bytes stored in the descriptor. -EINVAL if len > 32. */
int hp_desc_set_inline(struct hp_desc *d, const void *payload, uint32_t len);

/* r[shm.payload.slot]: payload in slot index of the sender's pool. */
void hp_desc_set_slot(struct hp_desc *d, uint32_t index, uint32_t generation,
		      uint32_t offset, uint32_t len);

/* Checks a received copy: msg_type known (r[shm.desc.msg-type]), reserved
 * bytes zero, payload_len within max_payload_size, inline fields
 * (r[shm.desc.inline-fields]) or a payload of more than 32 bytes in a valid
 * slot of pool (r[shm.payload.slot], hp_slot_check), method_id 0 except on
 * Request, channel ids of Data/Close/Reset not 0 (r[shm.id.channel-parity])
 * and below max_channels (r[shm.flow.channel-table-indexing]). Parity is
 * not checked here: the caller allocates every channel id of a call, and
 * Data flows both ways, so a guest sends Data on the host's even ids too.
 * Parity is checked where a side takes an id the other allocated (hubd:
 * hp_chan_id_check on the channel id a hub.sink or hub.source Request
 * carries). pool may be NULL if no slot payload is acceptable.
 * On success *payload and *len give the payload bytes (inline: inside d).
 * -EPROTO otherwise with *rule set to the rule ID that was broken, for the
 * Goodbye (r[shm.goodbye.payload]). */
int hp_desc_validate(const struct hp_desc *d, const struct hp_desc_limits *lim,
		     const struct hp_slot_pool *pool, const uint8_t **payload,
		     uint32_t *len, const char **rule);

#endif
