/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Message payloads (r[shm.metadata.in-payload], r[shm.goodbye.payload]).
 *
 *   Request  = { metadata: Vec<(String, MetadataValue)>, arguments }
 *   Response = { metadata, result: Result<T, RoamError<E>> }
 *   MetadataValue: String=0, Bytes=1, U64=2.  Result: Ok=0, Err=1.
 *   RoamError: User(E)=0, UnknownMethod=1, InvalidPayload=2, Cancelled=3.
 *   Goodbye  = String reason naming the violated rule ID.
 *   Data     = the element's postcard bytes; Cancel, Close, Reset: empty.
 *
 * arguments, T and E are method-specific postcard values: they are carried as
 * the raw bytes that follow, which the method's handler decodes. Decoded
 * views point into the input buffer; nothing is allocated. */
#ifndef HP_MSG_H
#define HP_MSG_H

#include <stddef.h>
#include <stdint.h>

/* r[shm.metadata.limits] */
#define HP_META_MAX_ENTRIES	128u
#define HP_META_MAX_KEY		256u
#define HP_META_MAX_VALUE	(16u * 1024)
#define HP_META_MAX_TOTAL	(64u * 1024)	/* keys + values, all entries */

#define HP_META_STRING		0u
#define HP_META_BYTES		1u
#define HP_META_U64		2u

#define HP_RESULT_OK		0u
#define HP_RESULT_ERR		1u

#define HP_ERR_USER		0u
#define HP_ERR_UNKNOWN_METHOD	1u
#define HP_ERR_INVALID_PAYLOAD	2u
#define HP_ERR_CANCELLED	3u

struct hp_meta_entry {
	const char	*key;
	size_t		key_len;
	uint32_t	type;		/* HP_META_* */
	const uint8_t	*value;		/* String or Bytes */
	size_t		value_len;
	uint64_t	u64;		/* U64 */
};

struct hp_meta {
	struct hp_meta_entry	*entries;
	uint32_t		count;
	uint32_t		cap;	/* decoder: room in entries */
};

struct hp_request {
	struct hp_meta	meta;
	const uint8_t	*args;		/* raw postcard of the arguments */
	size_t		args_len;
};

struct hp_response {
	struct hp_meta	meta;
	uint32_t	result;		/* HP_RESULT_OK or HP_RESULT_ERR */
	uint32_t	error;		/* HP_ERR_* when result is Err */
	const uint8_t	*value;		/* Ok: T; Err(User): E; else empty */
	size_t		value_len;
};

/* Each encoder returns the encoded length, -ENOSPC if buf is too small or
 * -EINVAL for metadata over a limit or of an unknown type. */
int64_t hp_msg_encode_request(uint8_t *buf, size_t cap, const struct hp_meta *meta,
			      const uint8_t *args, size_t args_len);
int64_t hp_msg_encode_response(uint8_t *buf, size_t cap, const struct hp_response *r);
int64_t hp_msg_encode_goodbye(uint8_t *buf, size_t cap, const char *reason);

/* Decoders return 0 or -EBADMSG (malformed, truncated, trailing garbage
 * where none may be) or -E2BIG (metadata over a limit, or more entries than
 * meta.cap). The caller sets meta.entries/meta.cap before the call. */
int hp_msg_decode_request(const uint8_t *buf, size_t len, struct hp_request *r);
int hp_msg_decode_response(const uint8_t *buf, size_t len, struct hp_response *r);
int hp_msg_decode_goodbye(const uint8_t *buf, size_t len, const char **reason,
			  size_t *reason_len);

/* Checks metadata against r[shm.metadata.limits]; 0 or -E2BIG. */
int hp_meta_check(const struct hp_meta *meta);

/* The first String entry named key: 1 with its value in *v (UTF-8, as
 * decoded) and *n, else 0. */
int hp_meta_str(const struct hp_meta *meta, const char *key, const char **v, size_t *n);
/* Whether s[0..n) is the NUL-terminated text want. */
int hp_meta_is(const char *s, size_t n, const char *want);

#endif
