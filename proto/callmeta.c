/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A call's deadline and trace context in Request metadata (callmeta.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/callmeta.h"
#include "proto/postcard.h"

static int
key_is(const struct hp_meta_entry *e, const char *key)
{
	return hp_meta_is(e->key, e->key_len, key);
}

static int
hexval(char c)
{
	/* lower-case only, as W3C trace context writes them */
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int
unhex(const char *s, uint8_t *out, size_t n)
{
	uint8_t any = 0;

	for (size_t i = 0; i < n; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
		any |= out[i];
	}
	return any != 0 ? 0 : -ENOENT;
}

int
hp_traceparent_parse(const char *s, size_t n, struct hp_callmeta *cm)
{
	struct hp_callmeta t = { 0 };

	/* version 00 only: its length is exact (a later version may be
	 * longer; we know none) */
	if (n != HP_TRACEPARENT_LEN || s[0] != '0' || s[1] != '0' || s[2] != '-' ||
	    s[35] != '-' || s[52] != '-')
		return -EINVAL;
	if (unhex(s + 3, t.trace_id, 16) != 0 || unhex(s + 36, t.parent_id, 8) != 0)
		return -EINVAL;		/* not hex, or all zero */
	if (hexval(s[53]) < 0 || hexval(s[54]) < 0)
		return -EINVAL;
	cm->flags = (uint8_t)(hexval(s[53]) << 4 | hexval(s[54]));
	memcpy(cm->trace_id, t.trace_id, 16);
	memcpy(cm->parent_id, t.parent_id, 8);
	cm->has_trace = 1;
	return 0;
}

static void
hex(char *out, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
}

void
hp_traceparent_format(const struct hp_callmeta *cm, char out[HP_TRACEPARENT_LEN + 1])
{
	memcpy(out, "00-", 3);
	hex(out + 3, cm->trace_id, 16);
	out[35] = '-';
	hex(out + 36, cm->parent_id, 8);
	out[52] = '-';
	hex(out + 53, &cm->flags, 1);
	out[55] = '\0';
}

void
hp_trace_id_format(const struct hp_callmeta *cm, char out[HP_TRACE_ID_HEX + 1])
{
	hex(out, cm->trace_id, 16);
	out[HP_TRACE_ID_HEX] = '\0';
}

/* n random bytes, not all zero (W3C: an all-zero id is invalid):
 * arc4random_buf (glibc 2.36) never fails and never blocks. */
static void
random_id(uint8_t *p, size_t n)
{
	arc4random_buf(p, n);
	p[n - 1] |= p[0] == 0 ? 1 : 0;
}

void
hp_trace_new(struct hp_callmeta *cm, int new_trace)
{
	if (new_trace || !cm->has_trace) {
		random_id(cm->trace_id, sizeof(cm->trace_id));
		cm->flags = 0x01;	/* sampled: we record what we start */
		cm->has_trace = 1;
	}
	random_id(cm->parent_id, sizeof(cm->parent_id));
}

int
hp_callmeta_read(const struct hp_meta *meta, struct hp_callmeta *cm, const char **why)
{
	int seen_deadline = 0;

	memset(cm, 0, sizeof(*cm));
	for (uint32_t i = 0; i < meta->count; i++) {
		const struct hp_meta_entry *e = &meta->entries[i];

		if (key_is(e, HP_META_DEADLINE)) {
			if (seen_deadline++) {
				*why = "metadata hub.deadline given twice";
				return -EBADMSG;
			}
			if (e->type != HP_META_U64) {
				*why = "metadata hub.deadline is not a U64";
				return -EBADMSG;
			}
			if (e->u64 == 0) {
				*why = "metadata hub.deadline is 0 (absent means none)";
				return -EBADMSG;
			}
			cm->deadline_ns = e->u64;
		} else if (key_is(e, HP_META_TRACEPARENT)) {
			if (cm->has_trace) {
				*why = "metadata traceparent given twice";
				return -EBADMSG;
			}
			if (e->type != HP_META_STRING) {
				*why = "metadata traceparent is not a String";
				return -EBADMSG;
			}
			if (hp_traceparent_parse((const char *)e->value, e->value_len, cm) != 0) {
				*why = "metadata traceparent is not a W3C traceparent "
				    "(00-<32 hex>-<16 hex>-<2 hex>, lower-case, ids not zero)";
				return -EBADMSG;
			}
		}
	}
	return 0;
}

int64_t
hp_callmeta_encode(uint8_t *buf, size_t cap, const struct hp_callmeta *cm)
{
	char tp[HP_TRACEPARENT_LEN + 1];
	struct hp_pc_enc e;

	hp_pc_enc_init(&e, buf, cap);
	hp_pc_put_seq_len(&e, (cm->deadline_ns != 0) + (cm->has_trace != 0));
	if (cm->deadline_ns != 0) {
		hp_pc_put_str(&e, HP_META_DEADLINE, strlen(HP_META_DEADLINE));
		hp_pc_put_tag(&e, HP_META_U64);
		hp_pc_put_u64(&e, cm->deadline_ns);
	}
	if (cm->has_trace) {
		hp_traceparent_format(cm, tp);
		hp_pc_put_str(&e, HP_META_TRACEPARENT, strlen(HP_META_TRACEPARENT));
		hp_pc_put_tag(&e, HP_META_STRING);
		hp_pc_put_str(&e, tp, HP_TRACEPARENT_LEN);
	}
	return e.err != 0 ? -ENOSPC : (int64_t)e.len;
}
