/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Postcard encoding (r[shm.payload.encoding]): LEB128 varints for integers
 * wider than a byte, zigzag for signed, length-prefixed strings and bytes,
 * varint enum tags. The decoder never reads past its input: every get checks
 * the remaining length first, and once an error is hit every later get fails
 * too (err is sticky), so callers may check once at the end. */
#ifndef HP_POSTCARD_H
#define HP_POSTCARD_H

#include <stddef.h>
#include <stdint.h>

/* Longest varint encodings (7 bits a byte). */
#define HP_PC_VARINT_MAX_U16	3
#define HP_PC_VARINT_MAX_U32	5
#define HP_PC_VARINT_MAX_U64	10

struct hp_pc_enc {
	uint8_t	*buf;
	size_t	cap;
	size_t	len;
	int	err;		/* 0 or -ENOSPC */
};

struct hp_pc_dec {
	const uint8_t	*buf;
	size_t		len;
	size_t		pos;
	int		err;	/* 0, -ENODATA (input ended) or -EBADMSG */
};

void hp_pc_enc_init(struct hp_pc_enc *e, uint8_t *buf, size_t cap);
void hp_pc_put_u8(struct hp_pc_enc *e, uint8_t v);
void hp_pc_put_bool(struct hp_pc_enc *e, int v);
void hp_pc_put_u16(struct hp_pc_enc *e, uint16_t v);
void hp_pc_put_u32(struct hp_pc_enc *e, uint32_t v);
void hp_pc_put_u64(struct hp_pc_enc *e, uint64_t v);
void hp_pc_put_i32(struct hp_pc_enc *e, int32_t v);
void hp_pc_put_i64(struct hp_pc_enc *e, int64_t v);
void hp_pc_put_f64(struct hp_pc_enc *e, double v);	/* 8 bytes, little-endian */
void hp_pc_put_bytes(struct hp_pc_enc *e, const void *p, size_t n);	/* len + bytes */
void hp_pc_put_str(struct hp_pc_enc *e, const char *s, size_t n);	/* len + UTF-8 */
void hp_pc_put_raw(struct hp_pc_enc *e, const void *p, size_t n);	/* bytes only */
void hp_pc_put_tag(struct hp_pc_enc *e, uint32_t tag);	/* enum variant, Option (0/1) */
void hp_pc_put_seq_len(struct hp_pc_enc *e, size_t n);	/* Vec length */

void hp_pc_dec_init(struct hp_pc_dec *d, const uint8_t *buf, size_t len);
uint8_t hp_pc_get_u8(struct hp_pc_dec *d);
int hp_pc_get_bool(struct hp_pc_dec *d);		/* -EBADMSG unless 0 or 1 */
uint16_t hp_pc_get_u16(struct hp_pc_dec *d);
uint32_t hp_pc_get_u32(struct hp_pc_dec *d);
uint64_t hp_pc_get_u64(struct hp_pc_dec *d);
int32_t hp_pc_get_i32(struct hp_pc_dec *d);
int64_t hp_pc_get_i64(struct hp_pc_dec *d);
double hp_pc_get_f64(struct hp_pc_dec *d);
/* Zero-copy: *p points into the input. Strings are checked to be UTF-8. */
int hp_pc_get_bytes(struct hp_pc_dec *d, const uint8_t **p, size_t *n);
int hp_pc_get_str(struct hp_pc_dec *d, const char **s, size_t *n);
int hp_pc_get_raw(struct hp_pc_dec *d, const uint8_t **p, size_t n);
uint32_t hp_pc_get_tag(struct hp_pc_dec *d);
/* A Vec length, rejected (-EBADMSG) if even one byte per element would not
 * fit in what is left of the input: no caller can be made to loop or
 * allocate for elements that are not there. */
size_t hp_pc_get_seq_len(struct hp_pc_dec *d);
/* Bytes not yet consumed. */
size_t hp_pc_remaining(const struct hp_pc_dec *d);

/* 1 if s[0..n) is valid UTF-8 (no overlongs, surrogates or > U+10FFFF). */
int hp_utf8_valid(const uint8_t *s, size_t n);
/* Bytes of the valid UTF-8 character at s (n > 0 left), 1 to 4; 0 if
 * s[0] starts none. */
size_t hp_utf8_char(const uint8_t *s, size_t n);
/* s[0..n) into dst as valid UTF-8: each byte that starts no valid
 * character becomes U+FFFD; cut between characters to fit cap. The
 * bytes written. */
size_t hp_utf8_lossy(uint8_t *dst, size_t cap, const uint8_t *s, size_t n);

#endif
