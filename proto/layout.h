/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The segment format: every shared struct, with its size and each offset the
 * spec names checked at compile time. Fixed-width fields only; shared words
 * are hp_atomic_* and touched only through proto/atomic.h. */
#ifndef HP_LAYOUT_H
#define HP_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "proto/atomic.h"

/* r[shm.segment.magic] */
#define HP_MAGIC		"RAPAHUB\x01"
#define HP_MAGIC_LEN		8
#define HP_VERSION		1u
/* r[shm.segment.header-size] */
#define HP_HEADER_SIZE		128u
/* r[shm.desc.size] */
#define HP_DESC_SIZE		64u
#define HP_INLINE_MAX		32u
#define HP_SLOT_INLINE		0xFFFFFFFFu
/* r[shm.topology.max-guests] */
#define HP_MAX_GUESTS		255u
#define HP_CACHE_LINE		64u
#define HP_PEER_ENTRY_SIZE	64u
#define HP_CHAN_ENTRY_SIZE	16u
#define HP_PEER_EXT_SIZE	128u
/* r[shm.slot.generation]: the first 4 bytes of a slot are its generation. */
#define HP_SLOT_GEN_SIZE	4u

/* r[shm.segment.peer-state] r[shm.spawn.reserved-state] */
#define HP_PEER_EMPTY		0u
#define HP_PEER_ATTACHED	1u
#define HP_PEER_GOODBYE		2u
#define HP_PEER_RESERVED	3u

/* r[shm.desc.msg-type] */
#define HP_MSG_REQUEST		1u
#define HP_MSG_RESPONSE		2u
#define HP_MSG_CANCEL		3u
#define HP_MSG_DATA		4u
#define HP_MSG_CLOSE		5u
#define HP_MSG_RESET		6u
#define HP_MSG_GOODBYE		7u
/* Ours (HP_FEAT_LANES): the hub's word to a guest about its lanes and a
 * guest's report back, on the hub's rings only (doc/protocol.md, "Lanes") */
#define HP_MSG_LANE		8u
/* Ours: the hub's word to a guest about the topics it publishes or reads
 * (proto/topic.h, struct hp_topic_msg), on the hub's rings only */
#define HP_MSG_TOPIC		9u

/* r[shm.flow.channel-table] */
#define HP_CHAN_FREE		0u
#define HP_CHAN_ACTIVE		1u
#define HP_CHAN_CLOSED		2u

/* Extensions (doc/protocol.md, "Waking"): announced in reserved bytes, used only when both
 * the host (header.host_features) and the guest (peer.guest_features) set
 * the bit; otherwise both sides follow the plain spec. */
#define HP_FEAT_WAITERS		0x1u	/* hp_peer_ext waiter words are honoured */
#define HP_FEAT_VARSLOT		0x2u	/* the shared variable-size pool is used */
#define HP_FEAT_ALL		(HP_FEAT_WAITERS | HP_FEAT_VARSLOT)
#define HP_FEAT_LANES		0x4u	/* direct lanes to other guests (lane.h) */
#define HP_FEAT_BELLS		0x8u	/* wakes on the ticket's bells, not the
					 * doorbell (doorbell.h, hp_bells_make) */

/* r[shm.segment.header] */
struct hp_header {
	hp_atomic_u64	magic;		/* "RAPAHUB\x01", stored last (release) */
	uint32_t	version;
	uint32_t	header_size;
	uint64_t	total_size;
	uint32_t	max_payload_size;
	uint32_t	initial_credit;
	uint32_t	max_guests;
	uint32_t	ring_size;
	uint64_t	peer_table_offset;
	uint64_t	slot_region_offset;
	uint32_t	slot_size;
	uint32_t	slots_per_guest;
	uint32_t	max_channels;
	hp_atomic_u32	host_goodbye;	/* r[shm.goodbye.host-atomic] */
	uint64_t	heartbeat_interval;	/* ns, 0 = disabled */
	/* reserved (48 bytes): ours, zero when unused */
	uint32_t	host_features;	/* HP_FEAT_* the host honours */
	hp_atomic_u32	awake;		/* HP_FEAT_WAITERS: how many of the hub's
					 * processes are not asleep (a hint: spin
					 * only while they fit the CPUs) */
	uint64_t	ext_offset;	/* hp_peer_ext table, 0 if none */
	uint64_t	varpool_offset;	/* hp_var_header, 0 if none */
	uint8_t		reserved[24];
};

_Static_assert(sizeof(struct hp_header) == HP_HEADER_SIZE, "header is 128 bytes");
_Static_assert(offsetof(struct hp_header, magic) == 0, "magic");
_Static_assert(offsetof(struct hp_header, version) == 8, "version");
_Static_assert(offsetof(struct hp_header, header_size) == 12, "header_size");
_Static_assert(offsetof(struct hp_header, total_size) == 16, "total_size");
_Static_assert(offsetof(struct hp_header, max_payload_size) == 24, "max_payload_size");
_Static_assert(offsetof(struct hp_header, initial_credit) == 28, "initial_credit");
_Static_assert(offsetof(struct hp_header, max_guests) == 32, "max_guests");
_Static_assert(offsetof(struct hp_header, ring_size) == 36, "ring_size");
_Static_assert(offsetof(struct hp_header, peer_table_offset) == 40, "peer_table_offset");
_Static_assert(offsetof(struct hp_header, slot_region_offset) == 48, "slot_region_offset");
_Static_assert(offsetof(struct hp_header, slot_size) == 56, "slot_size");
_Static_assert(offsetof(struct hp_header, slots_per_guest) == 60, "slots_per_guest");
_Static_assert(offsetof(struct hp_header, max_channels) == 64, "max_channels");
_Static_assert(offsetof(struct hp_header, host_goodbye) == 68, "host_goodbye");
_Static_assert(offsetof(struct hp_header, heartbeat_interval) == 72, "heartbeat_interval");
_Static_assert(offsetof(struct hp_header, host_features) == 80, "reserved area starts at 80");
_Static_assert(offsetof(struct hp_header, awake) == 84, "awake (doc/protocol.md section 10)");

/* r[shm.segment.peer-table] */
struct hp_peer_entry {
	hp_atomic_u32	state;		/* HP_PEER_* */
	hp_atomic_u32	epoch;		/* r[shm.crash.epoch] */
	hp_atomic_u32	g2h_head;	/* guest writes */
	hp_atomic_u32	g2h_tail;	/* host writes */
	hp_atomic_u32	h2g_head;	/* host writes */
	hp_atomic_u32	h2g_tail;	/* guest writes */
	hp_atomic_u64	last_heartbeat;	/* CLOCK_MONOTONIC ns */
	uint64_t	ring_offset;
	uint64_t	slot_pool_offset;
	uint64_t	channel_table_offset;
	/* reserved (8 bytes): ours */
	hp_atomic_u32	guest_features;	/* HP_FEAT_* the guest honours */
	uint32_t	reserved;
};

_Static_assert(sizeof(struct hp_peer_entry) == HP_PEER_ENTRY_SIZE, "peer entry is 64 bytes");
_Static_assert(offsetof(struct hp_peer_entry, state) == 0, "state");
_Static_assert(offsetof(struct hp_peer_entry, epoch) == 4, "epoch");
_Static_assert(offsetof(struct hp_peer_entry, g2h_head) == 8, "guest_to_host_head");
_Static_assert(offsetof(struct hp_peer_entry, g2h_tail) == 12, "guest_to_host_tail");
_Static_assert(offsetof(struct hp_peer_entry, h2g_head) == 16, "host_to_guest_head");
_Static_assert(offsetof(struct hp_peer_entry, h2g_tail) == 20, "host_to_guest_tail");
_Static_assert(offsetof(struct hp_peer_entry, last_heartbeat) == 24, "last_heartbeat");
_Static_assert(offsetof(struct hp_peer_entry, ring_offset) == 32, "ring_offset");
_Static_assert(offsetof(struct hp_peer_entry, slot_pool_offset) == 40, "slot_pool_offset");
_Static_assert(offsetof(struct hp_peer_entry, channel_table_offset) == 48, "channel_table_offset");
_Static_assert(offsetof(struct hp_peer_entry, guest_features) == 56, "reserved area starts at 56");

/* r[shm.desc.size] */
struct hp_desc {
	uint8_t		msg_type;	/* HP_MSG_* */
	uint8_t		flags;		/* r[shm.desc.flags]: ignored on receive */
	uint8_t		reserved[2];
	uint32_t	id;		/* request_id or channel_id: u32 both
					 * (r[shm.id.channel-id]) */
	uint64_t	method_id;	/* Request only, else 0 */
	uint32_t	payload_slot;	/* HP_SLOT_INLINE = inline */
	uint32_t	payload_generation;
	uint32_t	payload_offset;
	uint32_t	payload_len;
	uint8_t		inline_payload[HP_INLINE_MAX];
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct hp_desc) == HP_DESC_SIZE, "descriptor is 64 bytes");
_Static_assert(_Alignof(struct hp_desc) == 64, "descriptor is cache-line aligned");
_Static_assert(offsetof(struct hp_desc, msg_type) == 0, "msg_type");
_Static_assert(offsetof(struct hp_desc, flags) == 1, "flags");
_Static_assert(offsetof(struct hp_desc, id) == 4, "id");
_Static_assert(offsetof(struct hp_desc, method_id) == 8, "method_id");
_Static_assert(offsetof(struct hp_desc, payload_slot) == 16, "payload_slot");
_Static_assert(offsetof(struct hp_desc, payload_generation) == 20, "payload_generation");
_Static_assert(offsetof(struct hp_desc, payload_offset) == 24, "payload_offset");
_Static_assert(offsetof(struct hp_desc, payload_len) == 28, "payload_len");
_Static_assert(offsetof(struct hp_desc, inline_payload) == 32, "inline_payload");

/* r[shm.flow.channel-table] */
struct hp_chan_entry {
	hp_atomic_u32	state;		/* HP_CHAN_* */
	hp_atomic_u32	granted_total;	/* r[shm.flow.counter-per-channel]:
					 * the receiver writes, the sender reads */
	uint8_t		reserved[8];
};

_Static_assert(sizeof(struct hp_chan_entry) == HP_CHAN_ENTRY_SIZE, "channel entry is 16 bytes");
_Static_assert(offsetof(struct hp_chan_entry, state) == 0, "state");
_Static_assert(offsetof(struct hp_chan_entry, granted_total) == 4, "granted_total");

/* Our extension, one per peer at header.ext_offset (HP_FEAT_WAITERS).
 * Waiter words say who sleeps on what (HP_WAIT_* bits), so a producer makes
 * a wake syscall only when somebody sleeps. The guest's and the host's words
 * sit on separate cache lines: each side writes only its own line. */
#define HP_WAIT_RING_DATA	0x1u	/* sleeps until the ring it consumes has data */
#define HP_WAIT_RING_SPACE	0x2u	/* sleeps until the ring it produces has space */
#define HP_WAIT_SLOT		0x4u	/* sleeps until a slot of its pool is freed */
#define HP_WAIT_CREDIT		0x8u	/* sleeps until a channel is granted credit */

struct hp_peer_ext {
	hp_atomic_u32	guest_waits;	/* written by the guest */
	hp_atomic_u32	guest_awake;	/* 1 while it counts itself in header.awake */
	uint8_t		guest_pad[HP_CACHE_LINE - 8];
	hp_atomic_u32	host_waits;	/* written by the host */
	hp_atomic_u32	host_offer;	/* HP_FEAT_* the host lets this guest use,
					 * written before it is spawned */
	uint8_t		host_pad[HP_CACHE_LINE - 8];
};

_Static_assert(sizeof(struct hp_peer_ext) == HP_PEER_EXT_SIZE, "peer ext is 128 bytes");
_Static_assert(offsetof(struct hp_peer_ext, host_waits) == HP_CACHE_LINE, "host line");
_Static_assert(offsetof(struct hp_peer_ext, guest_awake) == 4, "guest_awake");

/* r[shm.varslot.shared]: our variable-size pool, one region for the whole
 * hub at header.varpool_offset (HP_FEAT_VARSLOT): an hp_var_header, then
 * nclasses hp_var_class, then (max_guests + 1) * nclasses hp_var_stats
 * (peer-major), the whole padded to HP_VAR_EXTENT_ALIGN. Each class's
 * slots live in extents (r[shm.varslot.extent-layout]): the first follows
 * the region inside total_size, later ones are appended to the file
 * beyond it (r[shm.varslot.extents]). */
#define HP_VAR_MAX_CLASSES	8u
#define HP_VAR_MAX_EXTENTS	16u
#define HP_VAR_EXTENT_ALIGN	4096u	/* extents are mapped on their own */
#define HP_VAR_NIL		0xFFFFFFFFu	/* end of a free list */
#define HP_VAR_NOBODY		0xFFFFFFFFu	/* the owner of a free slot */
#define HP_VAR_HOST		0u		/* the host's peer id as owner */

/* r[shm.varslot.ownership]: slot states */
#define HP_VAR_FREE		0u
#define HP_VAR_ALLOCATED	1u
#define HP_VAR_INFLIGHT		2u

/* A descriptor names a variable slot in payload_slot: bit 31 set, the
 * class in bits 27-30, the slot's index in its class (extent-major) in
 * bits 0-26. HP_SLOT_INLINE (all ones) names class 15: never a class. */
#define HP_VAR_SLOT_FLAG	0x80000000u
#define HP_VAR_CLASS_SHIFT	27
#define HP_VAR_INDEX_MASK	0x07FFFFFFu

struct hp_var_header {
	uint32_t	nclasses;	/* 1..HP_VAR_MAX_CLASSES */
	uint32_t	max_extents;	/* per class, 1..HP_VAR_MAX_EXTENTS */
	uint64_t	max_payload;	/* the largest class's slot size */
	/* a process that found every class exhausted sleeps on wake_seq
	 * (futex) with waiters counted; a free that sees waiters bumps it */
	hp_atomic_u32	waiters;
	hp_atomic_u32	wake_seq;
	uint8_t		reserved[40];
};

/* r[shm.varslot.extents] r[shm.varslot.freelist] */
struct hp_var_class {
	uint32_t	slot_size;	/* bytes of payload, a multiple of 64 */
	uint32_t	slots_per_extent;
	hp_atomic_u32	extent_count;	/* published after the extent's offset */
	hp_atomic_u32	grow_request;	/* a guest found the class exhausted */
	hp_atomic_u64	extent_offsets[HP_VAR_MAX_EXTENTS];
	hp_atomic_u32	corrupt;	/* a broken free list was seen: rebuild */
	uint8_t		pad0[44];
	/* the hot line: (tag << 32) | first free index, HP_VAR_NIL: empty */
	hp_atomic_u64	free_head;
	hp_atomic_u32	in_use;
	hp_atomic_u32	high_water;
	uint8_t		pad1[48];
};

/* r[shm.varslot.extent-layout] */
struct hp_var_extent {
	uint32_t	class_index;
	uint32_t	extent_index;
	uint32_t	slot_count;
	uint32_t	slot_size;
	uint64_t	meta_offset;	/* from the extent's start */
	uint64_t	data_offset;
	uint8_t		reserved[32];
};

/* r[shm.varslot.ownership]: the spec's SlotMeta (generation, state,
 * owner_peer, next_free), generation and state read and changed as one
 * 64-bit word, plus the SP8D claim timestamp and who freed it last. */
struct hp_var_slot {
	hp_atomic_u64	gen_state;	/* generation | state << 32 */
	hp_atomic_u32	owner;		/* who frees it next; HP_VAR_NOBODY */
	hp_atomic_u32	next_free;	/* index in the class, HP_VAR_NIL */
	hp_atomic_u64	claim_ns;	/* CLOCK_MONOTONIC of the last claim */
	hp_atomic_u32	last_owner;	/* who freed it last (diagnostics) */
	uint32_t	reserved;
};

/* Counters one peer keeps for one class; only that peer writes them. */
struct hp_var_stats {
	hp_atomic_u64	allocs;
	hp_atomic_u64	frees;
	hp_atomic_u64	conflicts;	/* CAS on free_head lost */
	hp_atomic_u64	fallbacks;	/* served by a larger class */
	hp_atomic_u64	waits;		/* every class exhausted */
	hp_atomic_u64	errors;		/* double free, stale generation, bad link */
	uint64_t	reserved[2];
};

_Static_assert(sizeof(struct hp_var_header) == 64, "var header is 64 bytes");
_Static_assert(sizeof(struct hp_var_class) == 256, "class header is 256 bytes");
_Static_assert(offsetof(struct hp_var_class, free_head) == 192, "free_head on its own line");
_Static_assert(sizeof(struct hp_var_extent) == 64, "extent header is 64 bytes");
_Static_assert(sizeof(struct hp_var_slot) == 32, "slot meta is 32 bytes");
_Static_assert(sizeof(struct hp_var_stats) == 64, "stats line is 64 bytes");
_Static_assert(offsetof(struct hp_header, varpool_offset) == 96, "varpool_offset");

#endif
