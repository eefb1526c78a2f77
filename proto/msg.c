/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Message payloads (msg.h). */
#include <errno.h>
#include <string.h>

#include "proto/msg.h"
#include "proto/postcard.h"

int
hp_meta_check(const struct hp_meta *meta)
{
	size_t total = 0;

	/* r[shm.metadata.limits] */
	if (meta->count > HP_META_MAX_ENTRIES)
		return -E2BIG;
	for (uint32_t i = 0; i < meta->count; i++) {
		const struct hp_meta_entry *e = &meta->entries[i];

		if (e->key_len > HP_META_MAX_KEY)
			return -E2BIG;
		if (e->type != HP_META_U64 && e->value_len > HP_META_MAX_VALUE)
			return -E2BIG;
		total += e->key_len + (e->type == HP_META_U64 ? 0 : e->value_len);
		if (total > HP_META_MAX_TOTAL)
			return -E2BIG;
	}
	return 0;
}

int
hp_meta_str(const struct hp_meta *meta, const char *key, const char **v, size_t *n)
{
	size_t klen = strlen(key);

	for (uint32_t i = 0; i < meta->count; i++) {
		const struct hp_meta_entry *e = &meta->entries[i];

		if (e->type == HP_META_STRING && e->key_len == klen &&
		    memcmp(e->key, key, klen) == 0) {
			*v = (const char *)e->value;
			*n = e->value_len;
			return 1;
		}
	}
	return 0;
}

int
hp_meta_is(const char *s, size_t n, const char *want)
{
	return n == strlen(want) && memcmp(s, want, n) == 0;
}

static int
put_meta(struct hp_pc_enc *e, const struct hp_meta *meta)
{
	int rc;

	if (meta == NULL) {
		hp_pc_put_seq_len(e, 0);
		return 0;
	}
	if ((rc = hp_meta_check(meta)) != 0)
		return -EINVAL;
	hp_pc_put_seq_len(e, meta->count);
	for (uint32_t i = 0; i < meta->count; i++) {
		const struct hp_meta_entry *m = &meta->entries[i];

		hp_pc_put_str(e, m->key, m->key_len);
		hp_pc_put_tag(e, m->type);
		if (m->type == HP_META_U64)
			hp_pc_put_u64(e, m->u64);
		else if (m->type == HP_META_STRING || m->type == HP_META_BYTES)
			hp_pc_put_bytes(e, m->value, m->value_len);
		else
			return -EINVAL;
	}
	return 0;
}

static int64_t
finish(struct hp_pc_enc *e)
{
	return e->err != 0 ? e->err : (int64_t)e->len;
}

/* r[shm.metadata.in-payload]: metadata, then the arguments */
int64_t
hp_msg_encode_request(uint8_t *buf, size_t cap, const struct hp_meta *meta,
		      const uint8_t *args, size_t args_len)
{
	struct hp_pc_enc e;
	int rc;

	hp_pc_enc_init(&e, buf, cap);
	if ((rc = put_meta(&e, meta)) != 0)
		return rc;
	hp_pc_put_raw(&e, args, args_len);
	return finish(&e);
}

int64_t
hp_msg_encode_response(uint8_t *buf, size_t cap, const struct hp_response *r)
{
	struct hp_pc_enc e;
	int rc;

	hp_pc_enc_init(&e, buf, cap);
	if ((rc = put_meta(&e, &r->meta)) != 0)
		return rc;
	hp_pc_put_tag(&e, r->result);
	if (r->result == HP_RESULT_ERR)
		hp_pc_put_tag(&e, r->error);
	if (r->result == HP_RESULT_OK || r->error == HP_ERR_USER)
		hp_pc_put_raw(&e, r->value, r->value_len);
	return finish(&e);
}

int64_t
hp_msg_encode_goodbye(uint8_t *buf, size_t cap, const char *reason)
{
	struct hp_pc_enc e;

	/* r[shm.goodbye.payload]: a String naming the rule */
	hp_pc_enc_init(&e, buf, cap);
	hp_pc_put_str(&e, reason, strlen(reason));
	return finish(&e);
}

static int
get_meta(struct hp_pc_dec *d, struct hp_meta *meta)
{
	size_t n = hp_pc_get_seq_len(d), total = 0;

	if (d->err != 0)
		return -EBADMSG;
	/* r[shm.metadata.limits] */
	if (n > HP_META_MAX_ENTRIES || n > meta->cap)
		return -E2BIG;
	meta->count = 0;
	for (size_t i = 0; i < n; i++) {
		struct hp_meta_entry *m = &meta->entries[i];

		memset(m, 0, sizeof(*m));
		if (hp_pc_get_str(d, &m->key, &m->key_len) != 0)
			return -EBADMSG;
		if (m->key_len > HP_META_MAX_KEY)
			return -E2BIG;
		m->type = hp_pc_get_tag(d);
		switch (m->type) {
		case HP_META_STRING:
			if (hp_pc_get_str(d, (const char **)(void *)&m->value, &m->value_len) != 0)
				return -EBADMSG;
			break;
		case HP_META_BYTES:
			if (hp_pc_get_bytes(d, &m->value, &m->value_len) != 0)
				return -EBADMSG;
			break;
		case HP_META_U64:
			m->u64 = hp_pc_get_u64(d);
			break;
		default:
			return -EBADMSG;
		}
		if (d->err != 0)
			return -EBADMSG;
		if (m->value_len > HP_META_MAX_VALUE)
			return -E2BIG;
		if ((total += m->key_len + m->value_len) > HP_META_MAX_TOTAL)
			return -E2BIG;
		meta->count++;
	}
	return 0;
}

int
hp_msg_decode_request(const uint8_t *buf, size_t len, struct hp_request *r)
{
	struct hp_pc_dec d;
	int rc;

	hp_pc_dec_init(&d, buf, len);
	if ((rc = get_meta(&d, &r->meta)) != 0)
		return rc;
	r->args = buf + d.pos;
	r->args_len = hp_pc_remaining(&d);
	return 0;
}

int
hp_msg_decode_response(const uint8_t *buf, size_t len, struct hp_response *r)
{
	struct hp_pc_dec d;
	int rc;

	hp_pc_dec_init(&d, buf, len);
	if ((rc = get_meta(&d, &r->meta)) != 0)
		return rc;
	r->result = hp_pc_get_tag(&d);
	r->error = 0;
	if (d.err != 0 || r->result > HP_RESULT_ERR)
		return -EBADMSG;
	if (r->result == HP_RESULT_ERR) {
		r->error = hp_pc_get_tag(&d);
		if (d.err != 0 || r->error > HP_ERR_CANCELLED)
			return -EBADMSG;
		/* only User carries a value */
		if (r->error != HP_ERR_USER && hp_pc_remaining(&d) != 0)
			return -EBADMSG;
	}
	r->value = buf + d.pos;
	r->value_len = hp_pc_remaining(&d);
	return 0;
}

int
hp_msg_decode_goodbye(const uint8_t *buf, size_t len, const char **reason,
		      size_t *reason_len)
{
	struct hp_pc_dec d;

	hp_pc_dec_init(&d, buf, len);
	if (hp_pc_get_str(&d, reason, reason_len) != 0 || hp_pc_remaining(&d) != 0)
		return -EBADMSG;
	return 0;
}
