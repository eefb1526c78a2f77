/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A call's deadline and trace context, carried as two Request metadata
 * entries (doc/protocol.md, "Call metadata"): read from a decoded
 * Request's metadata, checked as hostile, and written into a Request's
 * metadata Vec. One codec for hubd and libguest.
 *
 *   hub.deadline  U64     absolute CLOCK_MONOTONIC ns (the hub's clock)
 *   traceparent   String  W3C trace context, version 00:
 *                         00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags> */
#ifndef HP_CALLMETA_H
#define HP_CALLMETA_H

#include <stddef.h>
#include <stdint.h>

#include "proto/msg.h"

#define HP_META_DEADLINE	"hub.deadline"
#define HP_META_TRACEPARENT	"traceparent"
#define HP_TRACEPARENT_LEN	55	/* "00-" 32 "-" 16 "-" 2 */
#define HP_TRACE_ID_HEX		32

struct hp_callmeta {
	uint64_t	deadline_ns;	/* CLOCK_MONOTONIC, 0: none */
	uint8_t		has_trace;
	uint8_t		flags;		/* trace-flags */
	uint8_t		trace_id[16];
	uint8_t		parent_id[8];
};

/* The deadline and trace of a decoded Request's metadata into *cm
 * (zeroed first); other entries are ignored. 0, or -EBADMSG with *why
 * set (static text) for an entry of the wrong type, a duplicate, a
 * deadline of 0 or a traceparent that is not one. */
int	hp_callmeta_read(const struct hp_meta *meta, struct hp_callmeta *cm,
			 const char **why);

/* Parses a traceparent (exactly HP_TRACEPARENT_LEN bytes, version 00,
 * lower-case hex, neither id all zero, flags any) into cm's trace. 0 or
 * -EINVAL. */
int	hp_traceparent_parse(const char *s, size_t n, struct hp_callmeta *cm);
/* cm's trace as a traceparent, NUL-terminated, into out. */
void	hp_traceparent_format(const struct hp_callmeta *cm,
			      char out[HP_TRACEPARENT_LEN + 1]);
/* The trace-id alone as 32 hex digits, NUL-terminated. */
void	hp_trace_id_format(const struct hp_callmeta *cm, char out[HP_TRACE_ID_HEX + 1]);

/* A new parent-id (span) for cm's trace, random; with new_trace a new
 * trace-id too (flags 01, sampled) and has_trace set. */
void	hp_trace_new(struct hp_callmeta *cm, int new_trace);

/* The Request metadata Vec that carries cm (count, then an entry for
 * each part present) into buf: its length, or -ENOSPC. At most
 * HP_CALLMETA_MAX bytes. */
#define HP_CALLMETA_MAX		96
int64_t	hp_callmeta_encode(uint8_t *buf, size_t cap, const struct hp_callmeta *cm);

/* Whether a deadline has passed at now (both CLOCK_MONOTONIC ns). */
static inline int
hp_deadline_passed(uint64_t deadline_ns, uint64_t now_ns)
{
	return deadline_ns != 0 && now_ns >= deadline_ns;
}

/* The earlier of two deadlines, 0 being none. */
static inline uint64_t
hp_deadline_min(uint64_t a, uint64_t b)
{
	return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

#endif
