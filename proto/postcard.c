/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Postcard (postcard.h). Every get checks what is left before reading;
 * lengths are compared with what remains, never added to a position. */
#include <errno.h>
#include <string.h>

#include "proto/postcard.h"

void
hp_pc_enc_init(struct hp_pc_enc *e, uint8_t *buf, size_t cap)
{
	e->buf = buf;
	e->cap = cap;
	e->len = 0;
	e->err = 0;
}

void
hp_pc_put_raw(struct hp_pc_enc *e, const void *p, size_t n)
{
	if (e->err != 0)
		return;
	if (n > e->cap - e->len) {
		e->err = -ENOSPC;
		return;
	}
	if (n > 0)
		memcpy(e->buf + e->len, p, n);
	e->len += n;
}

void
hp_pc_put_u64(struct hp_pc_enc *e, uint64_t v)
{
	uint8_t b[HP_PC_VARINT_MAX_U64];
	size_t n = 0;

	do {
		b[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v != 0)
			b[n] |= 0x80;
		n++;
	} while (v != 0);
	hp_pc_put_raw(e, b, n);
}

void hp_pc_put_u8(struct hp_pc_enc *e, uint8_t v) { hp_pc_put_raw(e, &v, 1); }
void hp_pc_put_bool(struct hp_pc_enc *e, int v) { hp_pc_put_u8(e, v ? 1 : 0); }
void hp_pc_put_u16(struct hp_pc_enc *e, uint16_t v) { hp_pc_put_u64(e, v); }
void hp_pc_put_u32(struct hp_pc_enc *e, uint32_t v) { hp_pc_put_u64(e, v); }
void hp_pc_put_tag(struct hp_pc_enc *e, uint32_t tag) { hp_pc_put_u64(e, tag); }
void hp_pc_put_seq_len(struct hp_pc_enc *e, size_t n) { hp_pc_put_u64(e, n); }

/* zigzag: 0, -1, 1, -2... -> 0, 1, 2, 3... */
void
hp_pc_put_i32(struct hp_pc_enc *e, int32_t v)
{
	hp_pc_put_u64(e, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

void
hp_pc_put_i64(struct hp_pc_enc *e, int64_t v)
{
	hp_pc_put_u64(e, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void
hp_pc_put_f64(struct hp_pc_enc *e, double v)
{
	uint8_t b[8];
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	for (int i = 0; i < 8; i++, u >>= 8)
		b[i] = (uint8_t)u;
	hp_pc_put_raw(e, b, sizeof(b));
}

void
hp_pc_put_bytes(struct hp_pc_enc *e, const void *p, size_t n)
{
	hp_pc_put_u64(e, n);
	hp_pc_put_raw(e, p, n);
}

void
hp_pc_put_str(struct hp_pc_enc *e, const char *s, size_t n)
{
	hp_pc_put_bytes(e, s, n);
}

void
hp_pc_dec_init(struct hp_pc_dec *d, const uint8_t *buf, size_t len)
{
	d->buf = buf;
	d->len = len;
	d->pos = 0;
	d->err = 0;
}

size_t
hp_pc_remaining(const struct hp_pc_dec *d)
{
	return d->len - d->pos;
}

static void
fail(struct hp_pc_dec *d, int err)
{
	if (d->err == 0)
		d->err = err;
}

/* A varint of at most max bytes whose value fits bits bits, as postcard
 * reads it: more bytes than max, or bits beyond the width, are errors. */
static uint64_t
get_varint(struct hp_pc_dec *d, unsigned max, unsigned bits)
{
	uint64_t v = 0;

	if (d->err != 0)
		return 0;
	for (unsigned i = 0; i < max; i++) {
		uint8_t b;

		if (d->pos == d->len) {
			fail(d, -ENODATA);
			return 0;
		}
		b = d->buf[d->pos++];
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if ((b & 0x80) == 0) {
			/* the last byte may only carry the type's top bits */
			if (i == max - 1 && bits - 7 * i < 7 && (b >> (bits - 7 * i)) != 0) {
				fail(d, -EBADMSG);
				return 0;
			}
			return v;
		}
	}
	fail(d, -EBADMSG);	/* longer than the type allows */
	return 0;
}

uint8_t
hp_pc_get_u8(struct hp_pc_dec *d)
{
	if (d->err != 0)
		return 0;
	if (d->pos == d->len) {
		fail(d, -ENODATA);
		return 0;
	}
	return d->buf[d->pos++];
}

int
hp_pc_get_bool(struct hp_pc_dec *d)
{
	uint8_t b = hp_pc_get_u8(d);

	if (d->err != 0)
		return d->err;
	if (b > 1) {
		fail(d, -EBADMSG);
		return d->err;
	}
	return b;
}

uint16_t hp_pc_get_u16(struct hp_pc_dec *d)
{ return (uint16_t)get_varint(d, HP_PC_VARINT_MAX_U16, 16); }
uint32_t hp_pc_get_u32(struct hp_pc_dec *d)
{ return (uint32_t)get_varint(d, HP_PC_VARINT_MAX_U32, 32); }
uint64_t hp_pc_get_u64(struct hp_pc_dec *d)
{ return get_varint(d, HP_PC_VARINT_MAX_U64, 64); }
uint32_t hp_pc_get_tag(struct hp_pc_dec *d)
{ return hp_pc_get_u32(d); }

int32_t
hp_pc_get_i32(struct hp_pc_dec *d)
{
	uint32_t u = hp_pc_get_u32(d);

	return (int32_t)((u >> 1) ^ (0u - (u & 1)));
}

int64_t
hp_pc_get_i64(struct hp_pc_dec *d)
{
	uint64_t u = hp_pc_get_u64(d);

	return (int64_t)((u >> 1) ^ (0ull - (u & 1)));
}

double
hp_pc_get_f64(struct hp_pc_dec *d)
{
	const uint8_t *b;
	uint64_t u = 0;
	double v;

	if (hp_pc_get_raw(d, &b, 8) != 0)
		return 0;
	for (int i = 7; i >= 0; i--)
		u = u << 8 | b[i];
	memcpy(&v, &u, sizeof(v));
	return v;
}

int
hp_pc_get_raw(struct hp_pc_dec *d, const uint8_t **p, size_t n)
{
	if (d->err != 0)
		return d->err;
	if (n > d->len - d->pos) {
		fail(d, -ENODATA);
		return d->err;
	}
	*p = d->buf + d->pos;
	d->pos += n;
	return 0;
}

int
hp_pc_get_bytes(struct hp_pc_dec *d, const uint8_t **p, size_t *n)
{
	uint64_t len = hp_pc_get_u64(d);

	if (d->err != 0)
		return d->err;
	if (len > d->len - d->pos) {
		fail(d, -ENODATA);
		return d->err;
	}
	*n = (size_t)len;
	return hp_pc_get_raw(d, p, (size_t)len);
}

int
hp_pc_get_str(struct hp_pc_dec *d, const char **s, size_t *n)
{
	const uint8_t *p;

	if (hp_pc_get_bytes(d, &p, n) != 0)
		return d->err;
	if (!hp_utf8_valid(p, *n)) {
		fail(d, -EBADMSG);
		return d->err;
	}
	*s = (const char *)p;
	return 0;
}

size_t
hp_pc_get_seq_len(struct hp_pc_dec *d)
{
	uint64_t n = hp_pc_get_u64(d);

	if (d->err != 0)
		return 0;
	/* every element takes a byte at least: no more than are left */
	if (n > d->len - d->pos) {
		fail(d, -EBADMSG);
		return 0;
	}
	return (size_t)n;
}

size_t
hp_utf8_char(const uint8_t *s, size_t n)
{
	uint32_t cp;
	size_t k;

	if (n == 0)
		return 0;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xC2 && s[0] <= 0xDF) {
		k = 1;
		cp = s[0] & 0x1F;
	} else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		k = 2;
		cp = s[0] & 0x0F;
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		k = 3;
		cp = s[0] & 0x07;
	} else {
		return 0;	/* continuation byte first, overlong lead, or > F4 */
	}
	if (k > n - 1)
		return 0;	/* truncated */
	for (size_t j = 1; j <= k; j++) {
		if ((s[j] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[j] & 0x3F);
	}
	if ((k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
	    cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;	/* overlong, beyond Unicode, or a surrogate */
	return k + 1;
}

int
hp_utf8_valid(const uint8_t *s, size_t n)
{
	for (size_t i = 0, k; i < n; i += k)
		if ((k = hp_utf8_char(s + i, n - i)) == 0)
			return 0;
	return 1;
}

size_t
hp_utf8_lossy(uint8_t *dst, size_t cap, const uint8_t *s, size_t n)
{
	static const uint8_t fffd[3] = { 0xEF, 0xBF, 0xBD };
	size_t out = 0;

	for (size_t i = 0, k; i < n; i += k ? k : 1) {
		const uint8_t *c = (k = hp_utf8_char(s + i, n - i)) != 0 ? s + i : fffd;
		size_t w = k != 0 ? k : sizeof(fffd);

		if (w > cap - out)
			break;
		memcpy(dst + out, c, w);
		out += w;
	}
	return out;
}
